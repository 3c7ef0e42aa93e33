"""A partition's stages, defined once. The command line (``python -m proofflow.prover``),
the Airflow tasks (``proofflow.airflow.operators.proof``) and the prover service
(``proofflow.prover.service``) all call these:

    keys        ``ensure_key``: a proving key generated once per (circuit, log2, seed),
                atomically, under a lock; ``KeyCache``: keys loaded once per process and
                reused while their files are unchanged
    synthesize  a partition's witness and a/b/c, into a staging buffer (``synthesize``) or
                to a directory (``synthesize_to``)
    stage       the saved a/b/c packed into the device layout: one (3, n, 4) block file
    load        a partition's block and witness read into a staging buffer, checked
    prove       the device part (uploads, H, MSMs) and the host part (assembly, a check
                that the proof verifies), apart so a service can hand the device on between
    finalize    a proof checked and published into the run's bundle; the bundle completed

Bad inputs (missing, truncated or mismatched files) are ``InputError``: proving the same
inputs again cannot help, so callers fail without retrying. Phases are timed into any
object with a ``phase(name)`` context manager (``timing.PhaseTimer``, the Airflow tasks'
recorder)."""
from __future__ import annotations

import fcntl
import os
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from proofflow import settings, spec
from proofflow.prover import bundle, files
from proofflow.prover.backend.base import Backend
from proofflow.prover.circuits import Circuit, get_circuit
from proofflow.prover.groth16 import prover as groth16_prover
from proofflow.prover.groth16 import r1cs_to_qap, verifier
from proofflow.prover.groth16.data_structures import KeyFormatError, Proof, ProvingKey, VerifyingKey
from proofflow.prover.r1cs import ConstraintSystem, UnsatisfiedConstraint
from proofflow.prover.staging import Buffer, StagingPool
from proofflow.prover.timing import PhaseTimer

FR_BYTES = 32


class InputError(ValueError):
    """A partition's inputs are unusable (missing, truncated, of another shape or key):
    proving them again cannot help."""


def _timer(timer):
    return timer if timer is not None else PhaseTimer()


# -- keys ------------------------------------------------------------------------------------
def ensure_key(directory: Path, circuit: str, log2: int, seed: int, backend="auto", timer=None) -> bool:
    """The proving key of (circuit, log2, seed) in ``directory``: loaded and checked (every
    table's digest) when it is there, else generated and saved atomically, each table
    written into its file as it is computed (a large key is never whole in memory). One
    process at a time per directory (a lock file), so concurrent first runs generate it once. Returns
    True when a cached key was used. A registered circuit's key came with it: it is only
    checked here."""
    from proofflow.prover.groth16 import generator
    timer = _timer(timer)
    directory = Path(directory)
    if circuit not in spec.CIRCUITS:
        with timer.phase("load_cached"):
            try:
                ProvingKey.load(directory)
            except KeyFormatError as exc:
                raise InputError(f"circuit {circuit!r}: its proving key is unusable ({exc}); register the circuit "
                                 "again with `proofflow circuit add --replace`") from None
        return True
    directory.parent.mkdir(parents=True, exist_ok=True)
    with timer.phase("lock_wait"):
        lock = open(directory.parent / f".{directory.name}.lock", "w")
        fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        for stale in files.stale_dirs(directory):  # left by a setup killed mid-save (we hold the lock)
            files.remove_tree(stale)
        if (directory / "params.json").exists():
            with timer.phase("load_cached"):
                try:
                    pk = ProvingKey.load(directory)
                    if (pk.circuit, pk.log2) == (circuit, log2):
                        return True
                except KeyFormatError:
                    pass  # unusable: generated again below
        with files.atomic_dir(directory) as tmp:
            with timer.phase("setup"):  # each table written straight into its file as it is computed
                pk = generator.setup(get_circuit(circuit, log2), seed, backend=backend, directory=tmp)
            with timer.phase("save"):  # vk.json, params.json last; the directory renamed into place on exit
                pk.save(tmp)
        return False
    finally:
        fcntl.flock(lock, fcntl.LOCK_UN)
        lock.close()


@dataclass
class Key:
    """A proving key with its circuit's constraint system. ``resident``: its point tables
    are on the device (set by whoever uploaded them)."""
    pk: ProvingKey
    cs: ConstraintSystem
    directory: Path | None = None
    resident: bool = False

    @property
    def domain_size(self) -> int:
        return r1cs_to_qap.domain_for(self.cs).size


class KeyCache:
    """Proving keys loaded once per process (up to ``max_keys``, least recently used out)
    and reused while their files are unchanged (params.json's size and mtime). Keys are
    loaded without checking their tables' digests (``ensure_key`` checked them);
    ``check_digests`` does after a failed proof, and drops a corrupted key."""

    def __init__(self, max_keys: int = 2):
        self.max_keys = max_keys
        self._keys: OrderedDict[str, tuple] = OrderedDict()  # directory -> (fingerprint, Key)
        self._lock = threading.Lock()

    def get(self, directory, circuit: str, log2: int, timer=None) -> Key:
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
                return hit[1]
            with _timer(timer).phase("key_load"):
                try:
                    pk = ProvingKey.load(d, verify_digests=False)
                except KeyFormatError as exc:
                    raise InputError(f"proving key {d} is unusable: {exc}") from None
                if (pk.circuit, pk.log2) != (circuit, log2):
                    raise InputError(f"proving key {d} is for {pk.circuit} 2^{pk.log2}, the job is "
                                     f"{circuit} 2^{log2}")
                key = Key(pk, get_circuit(circuit, log2).constraint_system, d)
            self._keys[str(d)] = (fp, key)
            while len(self._keys) > self.max_keys:
                self._keys.popitem(last=False)
            return key

    def check_digests(self, directory) -> None:
        """Raise InputError (and forget the key) when the key's files do not match their digests."""
        try:
            ProvingKey.load(directory, verify_digests=True)
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
    in a staging buffer (or, for the witness of in-memory synthesis, a plain array). Views
    into the buffer are valid until ``release``."""
    abc: tuple
    witness: np.ndarray
    buffer: Buffer | None = None
    public_inputs: list[int] = field(default_factory=list)

    @property
    def memory_kind(self) -> str:
        """What the a/b/c really live in: page-locked only in a pinned pool's buffer."""
        return "pinned" if self.buffer is not None and self.buffer.pinned else "pageable"

    def release(self) -> None:
        if self.buffer is not None:
            self.buffer.release()

    def __enter__(self) -> "Staged":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def abc_bytes(n: int) -> int:
    """Bytes of a partition's a/b/c over a domain of ``n`` points."""
    return 3 * n * FR_BYTES


def _acquire(pool: StagingPool, nbytes: int, timer, timeout: float | None) -> Buffer:
    with _timer(timer).phase("staging_wait"):
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


def synthesize(circuit: Circuit, seed: int, partition: int, pool: StagingPool, timer=None,
               timeout: float | None = None, input=None) -> Staged:
    """A partition's witness and a/b/c, the a/b/c written straight into a buffer of ``pool``
    (no host copy between synthesis and the upload). Raises UnsatisfiedConstraint naming the
    first failing row; the buffer goes back to the pool on any failure."""
    timer = _timer(timer)
    n = circuit.domain_size
    buf = _acquire(pool, abc_bytes(n), timer, timeout)
    try:
        block = buf.view(np.uint64, (3, n, 4))
        with timer.phase("synthesis"):
            inst = _instance(circuit, seed, partition, input)
            abc = circuit.witness_map(inst.witness, out=(block[0], block[1], block[2]))
    except BaseException:
        buf.release()
        raise
    return Staged(abc, inst.witness, buf, inst.public_inputs)


def synthesize_to(directory, circuit: Circuit, seed: int, partition: int, timer=None, input=None) -> dict:
    """A partition's witness (witness.npy), a/b/c (abc.npy, shape (3, n, 4)) and public
    inputs (public.json), written atomically to ``directory``. Returns what the next stages
    need: the domain size and the public inputs (hex). A witness that violates a
    constraint is an InputError naming the first one."""
    timer = _timer(timer)
    with timer.phase("synthesis"):
        inst = _instance(circuit, seed, partition, input)
    with timer.phase("witness_map"):
        try:
            abc = np.stack(circuit.witness_map(inst.witness))
        except UnsatisfiedConstraint as exc:
            raise InputError(f"{_named(input, partition)}: the witness does not satisfy the circuit: {exc}") from None
    d = Path(directory)
    public = [hex(x) for x in inst.public_inputs]
    with timer.phase("write"):
        files.save_npy(d / "witness.npy", inst.witness)
        files.save_npy(d / "abc.npy", abc)
        files.write_json(d / "public.json", public)
    return {"n": int(abc.shape[1]), "public_inputs": public}


def _require(path: Path, what: str) -> Path:
    if not Path(path).exists():
        raise InputError(f"{what} {path} is missing (removed by cleanup, or the stage writing it did not finish): "
                         "run that stage again")
    return Path(path)


# -- stage -----------------------------------------------------------------------------------
def stage(directory, timer=None, timeout: float | None = None) -> dict:
    """The saved a/b/c packed into the device layout (one contiguous (3, n, 4) Fr block,
    abc.staged) through a staging buffer, which the prove stage reads straight into its own.
    Returns the block's path, the domain size, and the packing copy: its bytes, start (epoch
    seconds) and seconds."""
    timer = _timer(timer)
    d = Path(directory)
    with timer.phase("read"):
        try:
            abc = np.load(_require(d / "abc.npy", "a/b/c vectors"), mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError, EOFError) as exc:
            raise InputError(f"cannot read the a/b/c vectors {d / 'abc.npy'}: {exc}") from None
        if abc.ndim != 3 or abc.shape[0] != 3 or abc.shape[2] != 4 or abc.dtype != np.uint64:
            raise InputError(f"{d / 'abc.npy'}: {abc.dtype} {abc.shape}, expected (3, n, 4) uint64")
        n = abc.shape[1]
        abc = np.ascontiguousarray(abc)
    nbytes = abc_bytes(n)
    out = d / "abc.staged"
    with timer.phase("stage"):
        with _acquire(staging_pool(pinned=False), nbytes, None, timeout) as buf:
            view = buf.view(np.uint64, (3, n, 4))
            t0 = time.time()
            np.copyto(view, abc)
            seconds = time.time() - t0
            with files.atomic_path(out) as tmp:
                view.tofile(tmp)
    return {"path": out, "n": int(n), "bytes": nbytes, "start": t0, "seconds": seconds}


# -- load ------------------------------------------------------------------------------------
def load(pool: StagingPool, block_path, witness_path, n: int, num_variables: int, timer=None,
         phase: str = "load", before_read: Callable[[], None] | None = None,
         timeout: float | None = None) -> Staged:
    """A partition's a/b/c block (3 x n Fr elements, raw) and witness (an .npy of
    ``num_variables`` Fr elements) read into one buffer of ``pool``; every size and shape
    checked (InputError). ``before_read`` runs once the buffer is held (the service checks
    there that its caller is still waiting)."""
    timer = _timer(timer)
    ab, wb = abc_bytes(n), num_variables * FR_BYTES
    buf = _acquire(pool, ab + wb, timer, timeout)
    try:
        if before_read is not None:
            before_read()
        with timer.phase(phase):
            block = buf.array[:ab].view(np.uint64).reshape(3, n, 4)
            try:
                with open(block_path, "rb") as f:
                    got = os.fstat(f.fileno()).st_size
                    if got == ab:
                        got = f.readinto(memoryview(block).cast("B"))
            except OSError as exc:
                raise InputError(f"cannot read the a/b/c block {block_path}: {exc.strerror or exc}") from None
            if got != ab:
                raise InputError(f"{block_path}: {got} bytes, expected {ab} (3 x {n} Fr elements)")
            witness = buf.array[ab:ab + wb].view(np.uint64).reshape(num_variables, 4)
            try:
                src = np.load(witness_path, mmap_mode="r", allow_pickle=False)
            except (OSError, ValueError, EOFError) as exc:
                raise InputError(f"cannot read the witness {witness_path}: {exc}") from None
            if not isinstance(src, np.ndarray) or src.shape != (num_variables, 4) or src.dtype != np.uint64:
                raise InputError(f"{witness_path}: witness of {getattr(src, 'dtype', type(src).__name__)} "
                                 f"{getattr(src, 'shape', '')}, expected ({num_variables}, 4) uint64")
            np.copyto(witness, src)
    except BaseException:
        buf.release()
        raise
    return Staged((block[0], block[1], block[2]), witness, buf)


def partition_files(directory) -> tuple[Path, Path]:
    """A staged partition's a/b/c block and witness (InputError when one is missing)."""
    d = Path(directory)
    return _require(d / "abc.staged", "staged a/b/c block"), _require(d / "witness.npy", "witness")


def load_for(key: Key, pool: StagingPool, block_path, witness_path, n: int, timer=None, **kw) -> Staged:
    """``load`` of a partition's files for ``key`` (the domain size checked against its circuit)."""
    if n != key.domain_size:
        raise InputError(f"the job's a/b/c have {n} points, the circuit's domain {key.domain_size}")
    return load(pool, block_path, witness_path, n, key.cs.num_variables, timer, **kw)


# -- prove -----------------------------------------------------------------------------------
def prove_device(key: Key, staged: Staged, backend: Backend, timer=None,
                 transfers: dict | None = None) -> groth16_prover.PendingProof:
    """The device part of a proof: uploads, H, the MSMs (phases h2d, ntt, msm); the
    transfers record the memory kind a/b/c really came from."""
    return groth16_prover.prove_device(key.pk, key.cs, staged.witness, backend, abc=staged.abc, timer=_timer(timer),
                                       transfers=transfers, memory_kind=staged.memory_kind)


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
def read_proof(path) -> Proof:
    path = _require(Path(path), "proof")
    try:
        return Proof.from_bytes(path.read_bytes())
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
    with timer.phase("manifest"):
        bundle.write_manifest(bundle_dir, circuit, log2, vk, entries, snarkjs)
    with timer.phase("verify"):
        return bundle.verify_bundle(bundle_dir)
