"""Proving keys: made once per (circuit, log2, seed) and kept resident where they are used.

``ensure_key`` generates a key atomically under a lock (one GPU setup at a time per host) or
checks the one there; ``KeyCache`` loads keys once per process, reuses them while their files
are unchanged, and keeps them resident on the device within a byte budget, evicting the least
recently used between two proofs."""
from __future__ import annotations

import fcntl
import logging
import threading
import time
from collections import OrderedDict, deque
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from proofflow import settings, spec
from proofflow.phases import Phase
from proofflow.prover import files, private_dir
from proofflow.prover.circuits.by_name import get_circuit
from proofflow.prover.curves import registry
from proofflow.prover.device import pippenger
from proofflow.prover.device.options import DeviceOptions
from proofflow.prover.errors import InputError
from proofflow.prover.groth16 import r1cs_to_qap
from proofflow.prover.groth16.data_structures import PK_TABLES, KeyFormatError, ProvingKey
from proofflow.prover.r1cs import ConstraintSystem
from proofflow.prover import timing

log = logging.getLogger(__name__)


def _uses_gpu(backend) -> bool:
    """Whether a setup with ``backend`` (a name or a Backend) computes on the GPU."""
    name = backend if isinstance(backend, str) else getattr(backend, "name", "")
    if name == "auto":
        from proofflow.prover import device
        return device.available()
    return name.startswith("gpu")


def _flock(path: Path):
    """An exclusive lock on ``path`` (created), held until the returned file is closed."""
    lock = open(path, "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    return lock


def ensure_key(directory: Path, circuit: str, log2: int, seed: int, backend="auto", timer=None,
               curve: str = registry.DEFAULT) -> bool:
    """The proving key of (circuit, log2, seed) over ``curve`` in ``directory``: loaded and checked (every
    table's digest; a table unchanged since it last matched is trusted by its stat) when it is there, else generated and saved atomically, each table
    written into its file as it is computed (a large key is never whole in memory). One
    process at a time per directory (a lock file, ``lock_wait``), so concurrent first runs
    generate it once; and on the GPU one setup at a time per host
    (PROOFFLOW_SETUP_LOCK, ``setup_lock_wait``): a setup wants the whole device, and
    setups of distinct keys started together would otherwise share it (and its memory) all
    at once. Returns True when a cached key was used. A registered circuit's key came with
    it: it is only checked here (its curve too). A key there of another curve is an
    InputError: the directory of each curve's keys is its own (``layout.params_dir``)."""
    from proofflow.prover.groth16 import generator
    timer = timing.ensure(timer)
    directory = Path(directory)
    if circuit not in spec.CIRCUITS:
        with timer.phase(Phase.LOAD_CACHED):
            try:
                pk = ProvingKey.load(directory)
            except KeyFormatError as exc:
                raise InputError(f"circuit {circuit!r}: its proving key is unusable ({exc}); register the circuit "
                                 "again with `proofflow circuit add --replace`") from None
        _same_curve(pk, directory, curve)
        return True
    directory.parent.mkdir(parents=True, exist_ok=True)
    with timer.phase(Phase.LOCK_WAIT):
        lock = _flock(directory.parent / f".{directory.name}.lock")
    try:
        files.recover_dirs(directory.parent, directory.name)  # what a setup killed mid-save left
        if (directory / "params.json").exists():
            with timer.phase(Phase.LOAD_CACHED):
                try:
                    pk = ProvingKey.load(directory)
                except KeyFormatError:
                    pk = None  # unusable: generated again below
                if pk is not None and (pk.circuit, pk.log2) == (circuit, log2):
                    _same_curve(pk, directory, curve)
                    return True
        device_lock = None
        if _uses_gpu(backend):
            path = settings.current().setup_lock_path
            private_dir.ensure(path.parent)  # /tmp/proofflow-<uid>: checked, never trusted because it exists
            with timer.phase(Phase.SETUP_LOCK_WAIT):
                device_lock = private_dir.lock(path)
        try:
            with files.atomic_dir(directory) as tmp:
                with timer.phase(Phase.SETUP):  # each table written straight into its file as it is computed
                    pk = generator.setup(get_circuit(circuit, log2, curve), seed, backend=backend, directory=tmp)
                if device_lock is not None:  # the device is free once the tables are computed
                    device_lock.close()
                    device_lock = None
                with timer.phase(Phase.SAVE):  # vk.json, params.json last; the directory renamed into place on exit
                    pk.save(tmp)
        finally:
            if device_lock is not None:
                device_lock.close()
        return False
    finally:
        fcntl.flock(lock, fcntl.LOCK_UN)
        lock.close()


def _same_curve(pk: ProvingKey, directory: Path, curve: str) -> None:
    if pk.curve.name != curve:
        raise InputError(f"the proving key in {directory} is over {pk.curve.name}, the run asks for {curve}")


def key_bytes(pk: ProvingKey, plans: dict | None = None) -> int:
    """A proving key's footprint where the prover keeps it resident: its point tables' bytes
    as xy-LE (what ``Backend.prepare`` makes resident, a compressed table decompressed; on the
    device the same bytes, as Montgomery limbs, or fewer where a table drops its rows at
    infinity, ``device.density``), each times the copies its MSM plan (``plans``, by table;
    None: none) precomputes."""
    return sum(getattr(pk, name).xy_nbytes * (plans[name].shifts if plans else 1) for name in PK_TABLES)


@dataclass(frozen=True)
class Qap:
    """What a proof with a key needs of its circuit besides a/b/c and the witness: the QAP
    domain's size, the witness's length (the constant one included) and its instance
    variables (the constant one and the public inputs, which the L query skips)."""
    domain_size: int
    num_variables: int
    num_instance: int

    @classmethod
    def of(cls, cs: ConstraintSystem) -> "Qap":
        return cls(r1cs_to_qap.domain_for(cs).size, cs.num_variables, cs.num_instance)


@dataclass(eq=False)
class Key:
    """A proving key with its circuit's constraint system, or, for a snarkjs zkey's key
    (``KeyCache.get_zkey``), none: its a/b/c come from the zkey's own matrices, computed by
    the caller, and ``sizes`` stands in for the constraint system. ``resident``: its point
    tables are on the device (``KeyCache.make_resident`` uploaded them), each with the
    precomputed copies of its MSM plan in ``plans`` (by table; None: plain, as on the CPU)."""
    pk: ProvingKey
    cs: ConstraintSystem | None
    directory: Path | None = None
    plans: dict | None = None
    resident: bool = False
    used_at: float = 0.0
    fingerprint: tuple = ()  # of the files it was loaded from (KeyCache)
    sizes: Qap | None = None  # a zkey's, in place of its constraint system

    @property
    def qap(self) -> Qap:
        return self.sizes if self.sizes is not None else Qap.of(self.cs)

    @property
    def domain_size(self) -> int:
        return self.qap.domain_size

    @property
    def nbytes(self) -> int:
        return key_bytes(self.pk, self.plans)


def drop_resident(key: Key) -> None:
    """Forget the key's tables on the device (each backend keeps its copy in the table's
    ``device_cache``); the memory goes back to the device's pool."""
    for name in PK_TABLES:
        getattr(key.pk, name).device_cache.clear()
    key.resident = False


class KeyCache:
    """Proving keys loaded once per process and reused while their files are unchanged
    (params.json's size and mtime), and kept resident on the device within a byte budget
    (``budget``: None for no limit). A key's footprint is its tables' bytes (``key_bytes``),
    with, for a GPU prover (its ``options``; None: no copies), the precomputed copies of the
    MSM plans chosen for it against the budget and ``options.msm_precompute``
    (``pippenger.proving_key_plans``), recorded in ``Key.plans``.

    * ``get`` (any thread) loads a key for a job. Loaded keys that are not resident are
      forgotten, least recently used first, while all loaded keys together exceed the budget.
    * ``make_resident`` (the one thread that uses the device) uploads a key's tables before
      its proof, first evicting the least recently used resident keys until it fits; a key
      larger than the whole budget is an InputError. Eviction happens only there, between
      two proofs, so no proof ever loses its tables mid-way.

    Keys are loaded without checking their tables' digests (``ensure_key`` checked them);
    ``check_digests`` does after a failed proof, and drops a corrupted key."""

    def __init__(self, budget: int | None = None, options: DeviceOptions | None = None):
        self.budget, self.options = budget, options
        self._keys: OrderedDict[str, tuple] = OrderedDict()  # directory -> (fingerprint, Key), LRU first
        self._resident: OrderedDict[int, Key] = OrderedDict()  # id(key) -> Key, least recently used first
        self._lock = threading.Lock()
        self.evictions = 0
        self.evicted: deque = deque(maxlen=16)  # the latest evictions: {directory, bytes, at}

    def get(self, directory, circuit: str, log2: int, timer=None, curve: str | None = None) -> Key:
        """The key in ``directory`` for (circuit, log2) with its constraint system, over its own
        curve, which must be ``curve`` when given."""
        def build(d: Path, pk: ProvingKey) -> Key:
            return Key(pk, get_circuit(circuit, log2, pk.curve.name).constraint_system, d)
        return self._get(Path(directory), circuit, log2, timer, curve, build)

    def get_zkey(self, entry, circuit: str, log2: int, timer=None, curve: str | None = None) -> Key:
        """The proving key of a zkey's cache entry (``circom.zkey_cache``: its ``key/``, named
        by the zkey's file and domain as (circuit, log2)), with the entry's sizes in place of a
        constraint system."""
        from proofflow.prover.circom import zkey_cache

        def build(d: Path, pk: ProvingKey) -> Key:
            try:
                s = zkey_cache.read_sizes(entry)
            except KeyFormatError as exc:
                raise InputError(str(exc)) from None
            if (s.curve.name, s.domain_size, s.n_vars) != (pk.curve.name, 1 << pk.log2, len(pk.a_query)):
                raise InputError(f"{entry}/zkey.json does not describe its key ({s.curve.name}, domain "
                                 f"{s.domain_size}, {s.n_vars} signals)")
            return Key(pk, None, d, sizes=Qap(s.domain_size, s.n_vars, s.n_public + 1))
        return self._get(Path(entry) / zkey_cache.KEY, circuit, log2, timer, curve, build)

    def _get(self, d: Path, circuit: str, log2: int, timer, curve: str | None,
             build: Callable[[Path, ProvingKey], Key]) -> Key:
        """The key in ``d`` (loaded, checked to be (circuit, log2) and over ``curve``, then
        completed by ``build``), reused while its params.json is unchanged."""
        try:
            st = (d / "params.json").stat()
        except OSError:
            raise InputError(f"no proving key at {d} (params.json missing)") from None
        fp = (st.st_size, st.st_mtime_ns, circuit, log2)
        with self._lock:
            hit = self._keys.get(str(d))
            if hit and hit[0] == fp:
                self._keys.move_to_end(str(d))
                if curve is not None:
                    _same_curve(hit[1].pk, d, curve)
                return hit[1]
            with timing.ensure(timer).phase(Phase.KEY_LOAD):
                try:
                    pk = ProvingKey.load(d, verify_digests=False)
                except KeyFormatError as exc:
                    raise InputError(f"proving key {d} is unusable: {exc}") from None
                if (pk.circuit, pk.log2) != (circuit, log2):
                    raise InputError(f"proving key {d} is for {pk.circuit} 2^{pk.log2}, the job is "
                                     f"{circuit} 2^{log2}")
                if curve is not None:
                    _same_curve(pk, d, curve)
                key = build(d, pk)
                key.fingerprint = fp
                if self.options is not None:
                    key.plans = pippenger.proving_key_plans(pk, self.budget, self.options.msm_precompute)
            self._keys[str(d)] = (fp, key)
            self._trim(keep=key)
            return key

    def _trim(self, keep: Key) -> None:
        """Forget loaded keys that are not resident, least recently used first, while the
        loaded keys exceed the budget (under the lock; ``keep`` stays)."""
        if self.budget is None:
            return
        total = sum(k.nbytes for _fp, k in self._keys.values())
        for d, (_fp, k) in list(self._keys.items()):
            if total <= self.budget:
                break
            if k is not keep and not k.resident:
                del self._keys[d]
                total -= k.nbytes

    def make_resident(self, key: Key, upload: Callable, timer=None) -> list[Key]:
        """``key``'s tables on the device (``upload(key.pk, key.plans)``, timed as
        ``key_upload``, the evictions included), evicting least recently used resident keys
        to fit it; returns the evicted keys. Only the thread that runs the proofs on the
        device may call this."""
        now = time.time()
        with self._lock:
            if id(key) in self._resident:
                self._resident.move_to_end(id(key))
                key.used_at = now
                return []
            need = key.nbytes
            if self.budget is not None and need > self.budget:
                raise InputError(f"proving key {key.directory} needs {need} bytes on the device, more than the "
                                 f"whole key budget of {self.budget} bytes (PROOFFLOW_KEY_BUDGET)")
            # an older version of the same directory's key (its files changed) goes first
            victims = [k for k in self._resident.values() if k.directory == key.directory]
            used = sum(k.nbytes for k in self._resident.values()) - sum(k.nbytes for k in victims)
            for k in list(self._resident.values()):
                if self.budget is None or used + need <= self.budget:
                    break
                if k not in victims:
                    victims.append(k)
                    used -= k.nbytes
            for k in victims:
                del self._resident[id(k)]
        with timing.ensure(timer).phase(Phase.KEY_UPLOAD):
            for k in victims:
                drop_resident(k)
                log.info("evicted proving key %s (%d bytes, last used %.1f s ago) to fit %s (%d bytes) in the key "
                         "budget of %s bytes", k.directory, k.nbytes, now - k.used_at, key.directory, need, self.budget)
            try:
                upload(key.pk, key.plans)
            except BaseException:
                drop_resident(key)  # what part of it was uploaded
                raise
        with self._lock:
            key.resident, key.used_at = True, time.time()
            self._resident[id(key)] = key
            self.evictions += len(victims)
            self.evicted.extend({"directory": str(k.directory), "bytes": k.nbytes, "at": now} for k in victims)
            if key.directory is not None and str(key.directory) not in self._keys:
                self._keys[str(key.directory)] = (key.fingerprint, key)  # forgotten while its job waited
            self._trim(keep=key)
        return victims

    def evict(self, directory) -> int | None:
        """The key of ``directory`` off the device and forgotten (its next use loads it again);
        the bytes it held resident, None when it was not resident. Only the thread that runs
        the proofs on the device may call this (as ``make_resident``)."""
        d = str(Path(directory))
        with self._lock:
            victims = [k for k in self._resident.values() if str(k.directory) == d]
            for k in victims:
                del self._resident[id(k)]
            self._keys.pop(d, None)
        for k in victims:
            drop_resident(k)
            log.info("evicted proving key %s (%d bytes), as asked", k.directory, k.nbytes)
        return sum(k.nbytes for k in victims) if victims else None

    def drop_all(self) -> None:
        """Every resident key's tables off the device (after the device ran out of memory)."""
        with self._lock:
            keys, self._resident = list(self._resident.values()), OrderedDict()
        for k in keys:
            drop_resident(k)

    def check_digests(self, key: Key) -> None:
        """Raise InputError (and forget the key) when the key's files do not match their digests."""
        try:
            ProvingKey.load(key.directory, rehash=True)
        except KeyFormatError as exc:
            with self._lock:
                self._keys.pop(str(Path(key.directory)), None)
            remedy = ("remove its zkey cache entry (the next call parses the zkey again)" if key.cs is None
                      else "run the setup task again")
            raise InputError(f"the proving key is corrupted: {exc}; {remedy}") from None

    def keys(self) -> list[Key]:
        with self._lock:
            return [key for _fp, key in self._keys.values()]

    def directories(self) -> list[str]:
        with self._lock:
            return list(self._keys)

    def resident(self) -> list[dict]:
        """The resident keys, least recently used first: directory, circuit, log2, curve,
        bytes, last use, and each table's MSM plan as [digit bits, copies]."""
        with self._lock:
            return [{"directory": str(k.directory), "circuit": k.pk.circuit, "log2": k.pk.log2,
                     "curve": k.pk.curve.name, "bytes": k.nbytes, "used_at": k.used_at,
                     "plans": {name: [p.c, p.shifts] for name, p in (k.plans or {}).items()}}
                    for k in self._resident.values()]

    def resident_bytes(self) -> int:
        with self._lock:
            return sum(k.nbytes for k in self._resident.values())
