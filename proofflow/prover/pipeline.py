"""A partition's stages, defined once. The command line (``python -m proofflow.prover``),
the Airflow tasks (``proofflow.airflow.operators.proof``) and the prover service
(``proofflow.prover.service``) all call these:

    synthesize  a partition's witness and a/b/c, into a staging buffer (``synthesize``), a
                shared-memory segment (``synthesize_shared``) that the device reads in place,
                or another host's segment (``synthesize_remote``)
    prove       the device part (uploads, H, MSMs) and the host part (assembly, a check
                that the proof verifies), apart so a service can hand the device on between
    finalize    a proof checked and written into the run's bundle in its scratch; the bundle
                completed, then published whole

The keys they prove with are ``keys``'; where a partition waits for the device, ``staging``.

Bad inputs (missing, truncated or mismatched files) are ``InputError``: proving the same
inputs again cannot help, so callers fail without retrying. Phases are timed into any
object with a ``phase(name)`` context manager (``timing.PhaseTimer``, the Airflow tasks'
recorder)."""
from __future__ import annotations

import logging
import os
import shutil
import time
from pathlib import Path
from typing import Callable

import numpy as np

from proofflow import settings, spec
from proofflow.phases import Phase
from proofflow.prover import bundle, faults, files
from proofflow.prover.backend.base import Backend
from proofflow.prover.circuits import Circuit
from proofflow.prover.curves import registry
from proofflow.prover.errors import ErrorType, InputError, ProofCheckFailed
from proofflow.prover.groth16 import prover as groth16_prover
from proofflow.prover.groth16 import verifier
from proofflow.prover.groth16.data_structures import Proof, VerifyingKey
from proofflow.prover.keys import Key
from proofflow.prover.polynomial.domain import Radix2Domain
from proofflow.prover.r1cs import UnsatisfiedConstraint
from proofflow.prover.staging.pool import StagingPool, acquire, staging_pool
from proofflow.prover.staging.segment import abc_bytes, segment_bytes, segment_views
from proofflow.prover.staging.shared import SharedStaging
from proofflow.prover.staging.staged import Staged
from proofflow.prover import timing
from proofflow.prover.timing import PhaseTimer
from proofflow.spec import RunConfig

log = logging.getLogger(__name__)


# -- synthesize ------------------------------------------------------------------------------
def _named(input, partition: int) -> str:
    return f"input {input}" if isinstance(input, (str, Path)) else f"the input of partition {partition}"


def _reason(exc: Exception, input) -> str:
    """What is wrong, without the input file's path where the message starts with it (as
    the circom readers' do): the caller names the input once."""
    text = str(exc)
    if isinstance(input, (str, Path)):
        for path in dict.fromkeys((str(input), os.path.realpath(input))):
            if text.startswith(f"{path}: "):
                return text[len(path) + 2:]
    return text


def _instance(circuit: Circuit, seed: int, partition: int, input=None):
    """A partition's witness; an input the circuit refuses is an InputError naming it."""
    try:
        return circuit.instance(seed, partition, input)
    except (ValueError, OSError) as exc:
        raise InputError(f"{_named(input, partition)}: {_reason(exc, input)}",
                         getattr(exc, "detail", None) or str(exc)) from None


def _witness_map(circuit: Circuit, inst, out, input, partition: int):
    """a/b/c into ``out``; a witness violating a constraint is an InputError naming it."""
    try:
        return circuit.witness_map(inst.witness, out=out)
    except UnsatisfiedConstraint as exc:
        detail = f"the witness does not satisfy the circuit: {exc}"
        raise InputError(f"{_named(input, partition)}: {detail}", detail) from None


def synthesize(circuit: Circuit, seed: int, partition: int, pool: StagingPool, timer=None,
               timeout: float | None = None, input=None) -> Staged:
    """A partition's witness and a/b/c in one buffer of ``pool``, laid out as a shared
    segment: the a/b/c written straight into it (no host copy between synthesis and the
    upload), then the witness, so that it too uploads from page-locked memory (from a
    plain array, the 2^27 partitions' 4 GiB witness crossed at 6-9 GB/s). A witness
    violating a constraint is an InputError naming the first one; the buffer goes back to
    the pool on any failure."""
    timer = timing.ensure(timer)
    n, nv = circuit.domain_size, circuit.num_variables
    nbytes = segment_bytes(n, nv)
    buf = acquire(pool, nbytes, timer, timeout)
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
    timer = timing.ensure(timer)
    with timer.phase(Phase.SYNTHESIS):
        inst = _instance(circuit, seed, partition, input)
    n, nv = circuit.domain_size, len(inst.witness)

    def fill(abc: tuple, witness: np.ndarray) -> None:
        _witness_map(circuit, inst, abc, input, partition)
        np.copyto(witness, inst.witness)
        faults.point("synthesize.segment")  # a writer killed here leaves a lease to reclaim
    segment = write_shared(staging, holder, n, nv, fill, timer, timeout)
    return {"segment": segment, "n": n, "num_variables": nv, "bytes": abc_bytes(n),
            "public_inputs": [hex(x) for x in inst.public_inputs]}


def write_shared(staging: SharedStaging, holder: str, n: int, num_variables: int,
                 fill: Callable[[tuple, np.ndarray], None], timer=None, timeout: float | None = None,
                 bound: bool = False) -> str:
    """A shared segment leased for ``holder`` (phase staging_wait), ``fill(abc, witness)``
    writing a/b/c and the witness straight into it (phase witness_map), then marked ready;
    returns its id. A segment that can never fit the budget is an InputError; the lease ends
    on any failure (and is reclaimed if this process dies before it is ready, or at all when
    ``bound``: ``SharedStaging.lease``)."""
    timer = timing.ensure(timer)
    with timer.phase(Phase.STAGING_WAIT):
        try:
            lease = staging.lease(holder, n, num_variables,
                                  settings.current().staging_timeout_s if timeout is None else timeout, bound)
        except ValueError as exc:  # can never fit: no retry would help
            raise InputError(f"{exc} (PROOFFLOW_STAGING_BUDGET)") from None
    seg = staging.open(lease, writer=True)
    try:
        with timer.phase(Phase.WITNESS_MAP):
            fill(seg.abc, seg.witness)
        staging.ready(lease)
    except BaseException:
        staging.release(lease.id)
        raise
    finally:
        seg.close()
    return lease.id


def synthesize_remote(circuit: Circuit, seed: int, partition: int, endpoint: str, token: str | None, holder: str,
                      timer=None, timeout: float | None = None, input=None) -> dict:
    """``synthesize_shared`` for a host without the GPU: the partition is synthesized into
    this process's staging pool and streamed from there into a segment of the GPU host's
    shared staging (``staging.receiver``; phase ``stream``; over TLS when
    PROOFFLOW_STAGING_TLS_CA names the CA to verify the receiver against). Returns the same
    as ``synthesize_shared``, plus the stream's bytes and seconds."""
    from proofflow.prover.staging.receiver import StreamError, client_tls, send
    timer = timing.ensure(timer)
    config = settings.current()
    timeout = config.staging_timeout_s if timeout is None else timeout
    tls = client_tls(config.staging_tls_ca) if config.staging_tls_ca else None
    with synthesize(circuit, seed, partition, staging_pool(pinned=False), timer, timeout, input) as staged:
        block = staged.buffer.view(np.uint64, (3, circuit.domain_size, 4))
        t0 = time.time()
        with timer.phase(Phase.STREAM):
            try:
                reply = send(endpoint, token, holder, block, staged.witness, timeout, tls)
            except StreamError as exc:
                if exc.error_type is ErrorType.REFUSED:  # malformed or over the budget: no retry helps
                    raise InputError(str(exc)) from None
                raise
        n, nv = circuit.domain_size, len(staged.witness)
        return {"segment": reply["segment"], "n": n, "num_variables": nv, "bytes": abc_bytes(n),
                "public_inputs": [hex(x) for x in staged.public_inputs], "stream_bytes": reply["bytes"],
                "stream_start": t0, "stream_s": time.time() - t0}


# -- prove -----------------------------------------------------------------------------------
def upload(staged: Staged, backend: Backend, timer=None) -> list:
    """A partition's a/b/c and witness copied to the device (phase h2d), ahead of
    ``prove_device``; the transfers record the memory kind they really came from."""
    with timing.ensure(timer).phase(Phase.H2D):
        return groth16_prover.upload(backend, staged.abc, staged.witness, staged.memory_kind)


def prove_device(key: Key, staged: Staged, backend: Backend, timer=None, transfers: dict | None = None,
                 uploaded: list | None = None) -> groth16_prover.PendingProof:
    """The device part of a proof: uploads (unless ``uploaded`` by ``upload``), H in the key's
    basis, the MSMs (phases h2d, ntt, msm)."""
    qap = key.qap
    groth16_prover.check_key(key.pk, (key.cs or key.pk).curve, qap.num_variables)
    return groth16_prover.prove_qap(key.pk, Radix2Domain.for_size(qap.domain_size, key.pk.curve), qap.num_instance,
                                    staged.witness, staged.abc, backend, timer=timing.ensure(timer),
                                    transfers=transfers, memory_kind=staged.memory_kind, uploaded=uploaded)


def finish(pending: groth16_prover.PendingProof, key: Key, staged: Staged, timer=None) -> Proof:
    """The host part: assembly (and the wait for a host G2 MSM), then the proof checked
    against its public inputs (``ProofCheckFailed`` names the cause; a zkey's key has no
    constraint system to find it by, and says what it can). Needs ``staged`` still held:
    the check reads its witness and a/b/c."""
    proof = pending.finish(timing.ensure(timer))
    if key.cs is None:
        from proofflow.prover.circom.prover import check as check_zkey_proof
        check_zkey_proof(key.pk.vk, key.qap.num_instance - 1, staged.witness, proof)
    else:
        groth16_prover.check_proof(key.pk, key.cs, staged.witness, proof, staged.abc)
    return proof


def prove(key: Key, staged: Staged, backend: Backend, timer=None, transfers: dict | None = None) -> Proof:
    timer = timing.ensure(timer)
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


def complete_bundle(bundle_dir, config: RunConfig, vk: VerifyingKey, public_inputs: dict[int, list[int]],
                    timer=None) -> int:
    """A run's bundle completed: every partition's proof there (``public_inputs`` by
    partition), the manifest written last (its presence marks the bundle complete, after
    removing temporaries of killed writers), then every proof of the bundle verified.
    Returns the proofs verified; a partition missing or failing is a ProofCheckFailed."""
    timer = timing.ensure(timer)
    if sorted(public_inputs) != config.partition_ids:
        raise ProofCheckFailed(f"expected partitions 0..{config.partitions - 1}, got {sorted(public_inputs)}")
    for tmp in files.stale_temporaries(bundle_dir):
        tmp.unlink(missing_ok=True)
    roots = settings.current().run_input_roots
    inputs = [spec.input_label(x, roots) for x in config.inputs] if config.inputs else None
    with timer.phase(Phase.MANIFEST):
        bundle.write_manifest(bundle_dir, config.circuit, config.log2, vk, sorted(public_inputs.items()),
                              config.circom, inputs)
    with timer.phase(Phase.VERIFY):
        return _all_verified(bundle.verify_bundle(bundle_dir), config)


def _all_verified(results: list[bundle.PartitionResult], config: RunConfig) -> int:
    verified = sum(r.ok for r in results)
    if verified != config.partitions:
        bad = [r.partition for r in results if not r.ok]
        raise ProofCheckFailed(f"{verified}/{config.partitions} proofs verify; failing partitions: {bad}")
    return verified


def publish_bundle(work, out, config: RunConfig, vk: VerifyingKey, public_inputs: dict[int, list[int]],
                   summary: Callable[[int], dict], timer=None) -> int:
    """A run's bundle completed in its scratch (``work``, where finalize_partition put the
    proofs) with ``summary(verified)`` as run-summary.json, then moved whole into ``out``
    (``files.atomic_dir``): a run publishes nothing under the bundles until every partition
    has verified, and then all of it at once. A retry after the move finds it published
    (recorded as reused) and verifies it again. Returns the proofs verified."""
    work, out = Path(work), Path(out)
    timer = timing.ensure(timer)
    if not work.is_dir() and (out / bundle.MANIFEST).is_file():
        with timer.phase(Phase.REUSED):
            pass
        with timer.phase(Phase.VERIFY):
            return _all_verified(bundle.verify_bundle(out), config)
    verified = complete_bundle(work, config, vk, public_inputs, timer)
    files.write_json(work / "run-summary.json", summary(verified))
    with files.atomic_dir(out) as new:
        for path in work.iterdir():
            shutil.move(path, new / path.name)  # a rename, or a copy where the scratch is another filesystem
    files.remove_tree(work)
    return verified
