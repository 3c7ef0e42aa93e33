"""A partition's stages, defined once. The command line (``python -m proofflow.prover``),
the Airflow tasks (``proofflow.airflow.operators.proof``) and the prover service
(``proofflow.prover.service``) all call these:

    keys        ``ensure_key``: a proving key generated once per (circuit, log2, seed),
                atomically, under a lock (and one GPU setup at a time per host);
                ``KeyCache``: keys loaded once per process, reused while their files are
                unchanged, and kept resident on the device within a byte budget
    synthesize  a partition's witness and a/b/c, into a staging buffer (``synthesize``) or a
                shared-memory segment (``synthesize_shared``) that the device reads in place
    stage       a segment mapped and page-locked once per process (``MappedSegments``): no
                host copy of a/b/c between synthesis and the upload
    prove       the device part (uploads, H, MSMs) and the host part (assembly, a check
                that the proof verifies), apart so a service can hand the device on between
    finalize    a proof checked and published into the run's bundle; the bundle completed

Bad inputs (missing, truncated or mismatched files) are ``InputError``: proving the same
inputs again cannot help, so callers fail without retrying. Phases are timed into any
object with a ``phase(name)`` context manager (``timing.PhaseTimer``, the Airflow tasks'
recorder)."""
from __future__ import annotations

import fcntl
import logging
import os
import threading
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from proofflow import settings, spec
from proofflow.prover import bundle, files
from proofflow.prover.backend.base import Backend
from proofflow.prover.circuits import Circuit
from proofflow.prover.circuits.by_name import get_circuit
from proofflow.prover.curves import registry
from proofflow.prover.groth16 import prover as groth16_prover
from proofflow.prover.groth16 import r1cs_to_qap, verifier
from proofflow.prover.groth16.data_structures import PK_TABLES, KeyFormatError, Proof, ProvingKey, VerifyingKey
from proofflow.prover import device, faults
from proofflow.prover.device import pippenger
from proofflow.prover.errors import ErrorType, InputError
from proofflow.prover.r1cs import ConstraintSystem, UnsatisfiedConstraint
from proofflow.prover.shared_staging import Lease, Mapping, SegmentError, SharedStaging, segment_bytes, segment_views
from proofflow.prover.staging import Buffer, StagingPool
from proofflow.prover.timing import PhaseTimer
from proofflow.phases import Phase

FR_BYTES = 32

log = logging.getLogger(__name__)


def _timer(timer):
    return timer if timer is not None else PhaseTimer()


# -- keys ------------------------------------------------------------------------------------
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
    (``settings.setup_lock_path``, ``setup_lock_wait``): a setup wants the whole device, and
    setups of distinct keys started together would otherwise share it (and its memory) all
    at once. Returns True when a cached key was used. A registered circuit's key came with
    it: it is only checked here (its curve too). A key there of another curve is an
    InputError: the directory of each curve's keys is its own (``layout.params_dir``)."""
    from proofflow.prover.groth16 import generator
    timer = _timer(timer)
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
        for stale in files.stale_dirs(directory):  # left by a setup killed mid-save (we hold the lock)
            files.remove_tree(stale)
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
            path = settings.setup_lock_path()
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            with timer.phase(Phase.SETUP_LOCK_WAIT):
                device_lock = _flock(path)
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
    (what ``Backend.prepare`` uploads; on the device the same bytes, as Montgomery limbs, or
    fewer where a table drops its rows at infinity, ``device.density``), each times the
    copies its MSM plan (``plans``, by table; None: none) precomputes."""
    return sum(getattr(pk, name).xy.nbytes * (plans[name].shifts if plans else 1) for name in PK_TABLES)


@dataclass(eq=False)
class Key:
    """A proving key with its circuit's constraint system. ``resident``: its point tables
    are on the device (``KeyCache.make_resident`` uploaded them), each with the precomputed
    copies of its MSM plan in ``plans`` (by table; None: plain, as on the CPU)."""
    pk: ProvingKey
    cs: ConstraintSystem
    directory: Path | None = None
    plans: dict | None = None
    resident: bool = False
    used_at: float = 0.0
    fingerprint: tuple = ()  # of the files it was loaded from (KeyCache)

    @property
    def domain_size(self) -> int:
        return r1cs_to_qap.domain_for(self.cs).size

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
    with, where ``copies`` (a GPU prover), the precomputed copies of the MSM plans chosen for
    it against the budget (``pippenger.proving_key_plans``), recorded in ``Key.plans``.

    * ``get`` (any thread) loads a key for a job. Loaded keys that are not resident are
      forgotten, least recently used first, while all loaded keys together exceed the budget.
    * ``make_resident`` (the one thread that uses the device) uploads a key's tables before
      its proof, first evicting the least recently used resident keys until it fits; a key
      larger than the whole budget is an InputError. Eviction happens only there, between
      two proofs, so no proof ever loses its tables mid-way.

    Keys are loaded without checking their tables' digests (``ensure_key`` checked them);
    ``check_digests`` does after a failed proof, and drops a corrupted key."""

    def __init__(self, budget: int | None = None, copies: bool = False):
        self.budget, self.copies = budget, copies
        self._keys: OrderedDict[str, tuple] = OrderedDict()  # directory -> (fingerprint, Key), LRU first
        self._resident: OrderedDict[int, Key] = OrderedDict()  # id(key) -> Key, least recently used first
        self._lock = threading.Lock()
        self.evictions = 0
        self.evicted: deque = deque(maxlen=16)  # the latest evictions: {directory, bytes, at}

    def get(self, directory, circuit: str, log2: int, timer=None, curve: str | None = None) -> Key:
        """The key in ``directory`` for (circuit, log2) with its constraint system, over its own
        curve, which must be ``curve`` when given."""
        d = Path(directory)
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
            with _timer(timer).phase(Phase.KEY_LOAD):
                try:
                    pk = ProvingKey.load(d, verify_digests=False)
                except KeyFormatError as exc:
                    raise InputError(f"proving key {d} is unusable: {exc}") from None
                if (pk.circuit, pk.log2) != (circuit, log2):
                    raise InputError(f"proving key {d} is for {pk.circuit} 2^{pk.log2}, the job is "
                                     f"{circuit} 2^{log2}")
                if curve is not None:
                    _same_curve(pk, d, curve)
                plans = pippenger.proving_key_plans(pk, self.budget) if self.copies else None
                circuit_cs = get_circuit(circuit, log2, pk.curve.name).constraint_system
                key = Key(pk, circuit_cs, d, plans=plans, fingerprint=fp)
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
        with _timer(timer).phase(Phase.KEY_UPLOAD):
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

    def drop_all(self) -> None:
        """Every resident key's tables off the device (after the device ran out of memory)."""
        with self._lock:
            keys, self._resident = list(self._resident.values()), OrderedDict()
        for k in keys:
            drop_resident(k)

    def check_digests(self, directory) -> None:
        """Raise InputError (and forget the key) when the key's files do not match their digests."""
        try:
            ProvingKey.load(directory, rehash=True)
        except KeyFormatError as exc:
            with self._lock:
                self._keys.pop(str(Path(directory)), None)
            raise InputError(f"the proving key is corrupted: {exc}; run the setup task again") from None

    def keys(self) -> list[Key]:
        with self._lock:
            return [key for _fp, key in self._keys.values()]

    def directories(self) -> list[str]:
        with self._lock:
            return list(self._keys)

    def resident(self) -> list[dict]:
        """The resident keys, least recently used first: directory, bytes, last use, and
        each table's MSM plan as [digit bits, copies]."""
        with self._lock:
            return [{"directory": str(k.directory), "bytes": k.nbytes, "used_at": k.used_at,
                     "plans": {name: [p.c, p.shifts] for name, p in (k.plans or {}).items()}}
                    for k in self._resident.values()]

    def resident_bytes(self) -> int:
        with self._lock:
            return sum(k.nbytes for k in self._resident.values())


# -- staging ---------------------------------------------------------------------------------
_pools: dict[bool, StagingPool] = {}
_pools_lock = threading.Lock()


def staging_pool(pinned: bool) -> StagingPool:
    """This process's staging pool of the kind (page-locked or not), under the budget of
    PROOFFLOW_STAGING_BUDGET: one per process, so the budget bounds everything it holds."""
    with _pools_lock:
        if pinned not in _pools:
            _pools[pinned] = StagingPool(settings.staging_budget(), pinned=pinned)
        return _pools[pinned]


@dataclass
class Staged:
    """A partition ready to prove: a/b/c (three domain-sized Fr vectors) and the witness,
    in a staging buffer or a mapped segment (or plain arrays, where a caller builds them). Views
    into the buffer are valid until ``release``."""
    abc: tuple
    witness: np.ndarray
    buffer: Buffer | None = None
    public_inputs: list[int] = field(default_factory=list)
    mapping: "MappedSegments.Held | None" = None

    @property
    def memory_kind(self) -> str:
        """What the a/b/c really live in: page-locked only in a pinned pool's buffer or a
        registered segment."""
        if self.mapping is not None:
            return "pinned" if self.mapping.pinned else "pageable"
        return "pinned" if self.buffer is not None and self.buffer.pinned else "pageable"

    def release(self) -> None:
        if self.buffer is not None:
            self.buffer.release()
        if self.mapping is not None:
            self.mapping.release()

    def __enter__(self) -> "Staged":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def abc_bytes(n: int) -> int:
    """Bytes of a partition's a/b/c over a domain of ``n`` points."""
    return 3 * n * FR_BYTES


def _acquire(pool: StagingPool, nbytes: int, timer, timeout: float | None) -> Buffer:
    with _timer(timer).phase(Phase.STAGING_WAIT):
        try:
            return pool.acquire(nbytes, timeout=settings.staging_timeout_s() if timeout is None else timeout)
        except ValueError as exc:  # can never fit: no retry would help
            raise InputError(f"{exc} (PROOFFLOW_STAGING_BUDGET)") from None


# -- synthesize ------------------------------------------------------------------------------
def _named(input, partition: int) -> str:
    return f"input {input}" if isinstance(input, (str, Path)) else f"the input of partition {partition}"


def _instance(circuit: Circuit, seed: int, partition: int, input=None):
    """A partition's witness; an input the circuit refuses is an InputError naming it."""
    try:
        return circuit.instance(seed, partition, input)
    except (ValueError, OSError) as exc:
        raise InputError(f"{_named(input, partition)}: {exc}") from None


def _witness_map(circuit: Circuit, inst, out, input, partition: int):
    """a/b/c into ``out``; a witness violating a constraint is an InputError naming it."""
    try:
        return circuit.witness_map(inst.witness, out=out)
    except UnsatisfiedConstraint as exc:
        raise InputError(f"{_named(input, partition)}: the witness does not satisfy the circuit: {exc}") from None


def synthesize(circuit: Circuit, seed: int, partition: int, pool: StagingPool, timer=None,
               timeout: float | None = None, input=None) -> Staged:
    """A partition's witness and a/b/c in one buffer of ``pool``, laid out as a shared
    segment: the a/b/c written straight into it (no host copy between synthesis and the
    upload), then the witness, so that it too uploads from page-locked memory (from a
    plain array, the 2^27 partitions' 4 GiB witness crossed at 6-9 GB/s). A witness
    violating a constraint is an InputError naming the first one; the buffer goes back to
    the pool on any failure."""
    timer = _timer(timer)
    n, nv = circuit.domain_size, circuit.num_variables
    nbytes = segment_bytes(n, nv)
    buf = _acquire(pool, nbytes, timer, timeout)
    try:
        out, witness = segment_views(buf.view(np.uint64, (nbytes // 8,)), n, nv)
        with timer.phase(Phase.SYNTHESIS):
            inst = _instance(circuit, seed, partition, input)
            abc = _witness_map(circuit, inst, out, input, partition)
            np.copyto(witness, inst.witness)
    except BaseException:
        buf.release()
        raise
    return Staged(abc, witness, buf, inst.public_inputs)


def synthesize_shared(circuit: Circuit, seed: int, partition: int, staging: SharedStaging, holder: str,
                      timer=None, timeout: float | None = None, input=None) -> dict:
    """A partition's witness and a/b/c written once, into a shared segment leased for
    ``holder`` (``owner``), which the prover service maps and uploads from in place. Returns
    what the next stages need: the segment's id, sizes and the public inputs (hex). A
    witness that violates a constraint is an InputError naming the first one; the lease
    ends on any failure (and is reclaimed if this process dies before it is ready)."""
    timer = _timer(timer)
    with timer.phase(Phase.SYNTHESIS):
        inst = _instance(circuit, seed, partition, input)
    n, nv = circuit.domain_size, len(inst.witness)
    with timer.phase(Phase.STAGING_WAIT):
        try:
            lease = staging.lease(holder, n, nv, settings.staging_timeout_s() if timeout is None else timeout)
        except ValueError as exc:  # can never fit: no retry would help
            raise InputError(f"{exc} (PROOFFLOW_STAGING_BUDGET)") from None
    seg = staging.open(lease, writer=True)
    try:
        with timer.phase(Phase.WITNESS_MAP):
            _witness_map(circuit, inst, seg.abc, input, partition)
            np.copyto(seg.witness, inst.witness)
            faults.point("synthesize.segment")  # a writer killed here leaves a lease to reclaim
        staging.ready(lease)
    except BaseException:
        staging.release(lease.id)
        raise
    finally:
        seg.close()
    return {"segment": lease.id, "n": n, "num_variables": nv, "bytes": abc_bytes(n),
            "public_inputs": [hex(x) for x in inst.public_inputs]}


def synthesize_remote(circuit: Circuit, seed: int, partition: int, endpoint: str, token: str | None, holder: str,
                      timer=None, timeout: float | None = None, input=None) -> dict:
    """``synthesize_shared`` for a host without the GPU: the partition is synthesized into
    this process's staging pool and streamed from there into a segment of the GPU host's
    shared staging (``staging_receiver``; phase ``stream``). Returns the same as
    ``synthesize_shared``, plus the stream's bytes and seconds."""
    from proofflow.prover.staging_receiver import StreamError, send
    timer = _timer(timer)
    timeout = settings.staging_timeout_s() if timeout is None else timeout
    with synthesize(circuit, seed, partition, staging_pool(pinned=False), timer, timeout, input) as staged:
        block = staged.buffer.view(np.uint64, (3, circuit.domain_size, 4))
        t0 = time.time()
        with timer.phase(Phase.STREAM):
            try:
                reply = send(endpoint, token, holder, block, staged.witness, timeout)
            except StreamError as exc:
                if exc.error_type is ErrorType.REFUSED:  # malformed or over the budget: no retry helps
                    raise InputError(str(exc)) from None
                raise
        n, nv = circuit.domain_size, len(staged.witness)
        return {"segment": reply["segment"], "n": n, "num_variables": nv, "bytes": abc_bytes(n),
                "public_inputs": [hex(x) for x in staged.public_inputs], "stream_bytes": reply["bytes"],
                "stream_start": t0, "stream_s": time.time() - t0}


# -- stage -----------------------------------------------------------------------------------
class MappedSegments:
    """A process's mappings of shared segments, one per segment file and page-locked once
    (``cudaHostRegister``, ~0.1 s a GiB) when ``pin``: a released segment keeps its inode
    in the idle pool, so the next partition leasing it is already pinned here. Mappings of
    files removed since (evicted, reclaimed) are dropped on the next ``get`` once unused."""

    class Held:
        """One user's hold on a mapping (``fresh``: this call mapped it)."""

        def __init__(self, owner: "MappedSegments", entry: dict, lease: Lease, fresh: bool):
            self._owner, self._entry = owner, entry
            self.pinned, self.lease, self.fresh = entry["pinned"], lease, fresh

        def release(self) -> None:
            if self._entry is not None:
                with self._owner._lock:
                    self._entry["users"] -= 1
                    if self._entry.get("orphan") and self._entry["users"] == 0:
                        self._owner._unmap(self._entry)
                self._entry = None

    def __init__(self, staging: SharedStaging, pin: bool):
        self.staging, self.pin = staging, pin
        self._maps: dict[tuple, dict] = {}  # inode -> {"mapping", "pinned", "users"}
        self._lock = threading.Lock()

    def _sweep(self) -> None:
        for key, entry in list(self._maps.items()):
            if entry["users"] == 0 and entry["mapping"].gone():
                self._unmap(self._maps.pop(key))

    def _unmap(self, entry: dict) -> None:
        if entry["pinned"]:
            device.unregister(entry["mapping"].address)
        entry["mapping"].close()

    def stage(self, lease_id: str, holder: str | None = None, timer=None) -> dict:
        """Map (and pin) a ready segment ahead of its proof: the stage task's work, off the
        device's critical path. Returns the lease, whether it was mapped before, and the
        seconds the pinning took."""
        t0 = time.time()
        with _timer(timer).phase(Phase.REGISTER):
            with self.get(lease_id, holder) as staged:
                held = staged.mapping
        return {"segment": lease_id, "n": held.lease.n, "bytes": abc_bytes(held.lease.n), "pinned": held.pinned,
                "cached": not held.fresh, "start": t0, "seconds": time.time() - t0}

    def get(self, lease_id: str, holder: str | None = None, n: int | None = None,
            num_variables: int | None = None) -> Staged:
        """A ready segment's a/b/c and witness as a Staged (views over the mapping, held
        until ``release``); sizes checked against ``n`` and ``num_variables`` when given."""
        try:
            lease, path = self.staging.lookup(lease_id, owner=holder)
        except SegmentError as exc:
            raise InputError(str(exc)) from None
        if n is not None and lease.n != n:
            raise InputError(f"staged segment {lease_id} holds a/b/c of {lease.n} points, the job's circuit has {n}")
        if num_variables is not None and lease.num_variables != num_variables:
            raise InputError(f"staged segment {lease_id} holds a witness of {lease.num_variables} variables, the "
                             f"job's circuit has {num_variables}")
        with self._lock:
            self._sweep()
            st = os.stat(path)
            entry = self._maps.get((st.st_dev, st.st_ino))
            fresh = entry is None or entry["mapping"].size != st.st_size or entry["mapping"].gone()
            if fresh:
                if entry is not None:  # an old file's mapping under a reused inode: unmapped when unused
                    entry["orphan"] = True
                mapping = Mapping(path)
                if self.pin:
                    try:
                        device.register(mapping.address, mapping.size)
                    except Exception as exc:
                        mapping.close()
                        raise RuntimeError(f"cannot page-lock staged segment {path}: {exc} (the shared staging "
                                           "must be shared memory, a tmpfs such as /dev/shm: "
                                           "PROOFFLOW_SHARED_STAGING)") from exc
                entry = {"mapping": mapping, "pinned": self.pin, "users": 0}
                self._maps[mapping.inode] = entry
            entry["users"] += 1
        held = MappedSegments.Held(self, entry, lease, fresh)
        try:
            abc, witness = entry["mapping"].views(lease)
        except SegmentError as exc:
            held.release()
            raise InputError(str(exc)) from None
        return Staged(abc, witness, mapping=held)

    def get_for(self, key: Key, lease_id: str, holder: str | None = None) -> Staged:
        return self.get(lease_id, holder, key.domain_size, key.cs.num_variables)

    def close(self) -> None:
        with self._lock:
            for entry in self._maps.values():
                self._unmap(entry)
            self._maps.clear()

    def inodes(self) -> set[tuple[int, int]]:
        """The (device, inode) of each segment file mapped here."""
        with self._lock:
            return set(self._maps)

    def stats(self) -> dict:
        with self._lock:
            return {"mapped": len(self._maps), "mapped_bytes": sum(e["mapping"].size for e in self._maps.values()),
                    "pinned": self.pin}


# -- prove -----------------------------------------------------------------------------------
def upload(staged: Staged, backend: Backend, timer=None) -> list:
    """A partition's a/b/c and witness copied to the device (phase h2d), ahead of
    ``prove_device``; the transfers record the memory kind they really came from."""
    with _timer(timer).phase(Phase.H2D):
        return groth16_prover.upload(backend, staged.abc, staged.witness, staged.memory_kind)


def prove_device(key: Key, staged: Staged, backend: Backend, timer=None, transfers: dict | None = None,
                 uploaded: list | None = None) -> groth16_prover.PendingProof:
    """The device part of a proof: uploads (unless ``uploaded`` by ``upload``), H, the MSMs
    (phases h2d, ntt, msm)."""
    return groth16_prover.prove_device(key.pk, key.cs, staged.witness, backend, abc=staged.abc, timer=_timer(timer),
                                       transfers=transfers, memory_kind=staged.memory_kind, uploaded=uploaded)


def finish(pending: groth16_prover.PendingProof, key: Key, staged: Staged, timer=None) -> Proof:
    """The host part: assembly (and the wait for a host G2 MSM), then the proof checked
    against its public inputs (``ProofCheckFailed`` names the cause). Needs ``staged``
    still held: the check reads its witness and a/b/c."""
    proof = pending.finish(_timer(timer))
    groth16_prover.check_proof(key.pk, key.cs, staged.witness, proof, staged.abc)
    return proof


def prove(key: Key, staged: Staged, backend: Backend, timer=None, transfers: dict | None = None) -> Proof:
    timer = _timer(timer)
    return finish(prove_device(key, staged, backend, timer, transfers), key, staged, timer)


def prove_partitions(key: Key, circuit: Circuit, partitions: int, seed: int, out_dir, backend: Backend,
                     pool: StagingPool, progress: Callable[[int, PhaseTimer], None] | None = None) -> list[PhaseTimer]:
    """Synthesize and prove ``partitions`` partitions in this process into a proof bundle
    (the command line's prove and demo); one timer per partition."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    timers, entries = [], []
    for i in range(partitions):
        timer = PhaseTimer()
        with synthesize(circuit, seed, i, pool, timer) as staged:
            proof = prove(key, staged, backend, timer)
        bundle.write_proof(out_dir, i, proof)
        timers.append(timer)
        entries.append((i, staged.public_inputs))
        if progress:
            progress(i, timer)
    bundle.write_manifest(out_dir, circuit.name, circuit.log2, key.pk.vk, entries)
    return timers


# -- finalize --------------------------------------------------------------------------------
def _require(path: Path, what: str) -> Path:
    if not Path(path).exists():
        raise InputError(f"{what} {path} is missing (removed by cleanup, or the stage writing it did not finish): "
                         "run that stage again")
    return Path(path)


def read_proof(path, curve: str = registry.DEFAULT) -> Proof:
    """The proof of ``curve`` a prove stage wrote at ``path``."""
    path = _require(Path(path), "proof")
    try:
        return Proof.from_bytes(registry.get_curve(curve), path.read_bytes())
    except ValueError as exc:  # KeyFormatError included: a wrong length
        raise InputError(f"{path} is not a proof ({exc})") from None


def publish(proof: Proof, vk: VerifyingKey, public_inputs: list[int], bundle_dir, partition: int,
            snarkjs: bool = False) -> Path:
    """The proof checked against the verifying key and its public inputs, then written into
    the bundle (InputError when it does not verify); with ``snarkjs``, also as snarkjs's
    proof.json and public.json."""
    if not verifier.verify(vk, public_inputs, proof):
        raise InputError(f"partition {partition}: the proof does not verify")
    Path(bundle_dir).mkdir(parents=True, exist_ok=True)
    return bundle.write_proof(bundle_dir, partition, proof, public_inputs if snarkjs else None)


def complete_bundle(bundle_dir, circuit: str, log2: int, vk: VerifyingKey,
                    entries: list[tuple[int, list[int]]], timer=None, snarkjs: bool = False) -> list[bundle.PartitionResult]:
    """The manifest written last (its presence marks the bundle complete, after removing
    temporaries of killed writers), then every proof of the bundle verified."""
    timer = _timer(timer)
    for tmp in files.stale_temporaries(bundle_dir):
        tmp.unlink(missing_ok=True)
    with timer.phase(Phase.MANIFEST):
        bundle.write_manifest(bundle_dir, circuit, log2, vk, entries, snarkjs)
    with timer.phase(Phase.VERIFY):
        return bundle.verify_bundle(bundle_dir)
