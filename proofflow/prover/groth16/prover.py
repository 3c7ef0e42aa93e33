"""The Groth16 prover: H by NTTs on a backend, then the A, B (G1 and G2) and C MSMs.

The vectors go to the backend once (a/b/c and the witness, timed as transfers) and stay
there: H is computed and consumed by its MSM where the backend computes, never copied back.
"""
from __future__ import annotations

import contextlib
import secrets
from concurrent.futures import Future, ThreadPoolExecutor
from functools import lru_cache

import numpy as np

from proofflow.prover.backend.base import Backend, MsmJob, Transfer
from proofflow.prover.errors import ProofCheckFailed
from proofflow.prover.groth16 import r1cs_to_qap
from proofflow.prover.groth16.data_structures import H_BASES, Proof, ProvingKey
from proofflow.prover.r1cs import ConstraintSystem, UnsatisfiedConstraint
from proofflow.prover.timing import PhaseTimer
from proofflow.phases import Phase
from proofflow.spec import MemoryKind


@lru_cache(maxsize=1)
def _host_thread() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="proofflow-g2")


def random_scalar(modulus: int, rng: np.random.Generator | None = None) -> int:
    """Uniform in the field of ``modulus`` (a curve's r): from the OS's CSPRNG, or from
    ``rng`` for reproducible tests (512 random bits reduced, so the bias is ~2^-257)."""
    raw = rng.bytes(64) if rng is not None else secrets.token_bytes(64)
    return int.from_bytes(raw, "little") % modulus


def check_proof(pk: ProvingKey, cs: ConstraintSystem, witness: np.ndarray, proof: Proof, abc=None) -> None:
    """Verify a fresh proof against the public inputs its witness carries, so a prover fed
    files (the service, prove_gpu) never hands out a proof that does not verify (a few
    milliseconds: one multi-pairing). On failure, find the cause: the witness violating a
    constraint, a/b/c not computed from this witness, or else the key or the backend."""
    from proofflow.prover.groth16 import verifier
    fr = cs.fr
    if verifier.verify(pk.vk, fr.to_ints(witness[1:cs.num_instance]), proof):
        return
    if not fr.equal(witness[:1], fr.one()):
        raise ProofCheckFailed("the witness is not valid: its first variable must be the constant one")
    ext = cs.with_input_constraints
    expected = ext.evaluate(witness)
    try:
        cs.check(*expected)
    except UnsatisfiedConstraint as exc:
        raise ProofCheckFailed(f"the witness does not satisfy the circuit: {exc}") from None
    if abc is not None:
        n = ext.num_constraints
        for name, got, want in zip("abc", abc, expected):
            bad = np.flatnonzero(np.any(np.asarray(got)[:n] != want[:n], axis=1))
            if bad.size or np.any(np.asarray(got)[n:]):
                where = f"{name}[{int(bad[0])}]" if bad.size else f"{name} beyond row {n}"
                raise ProofCheckFailed(f"the a/b/c vectors were not computed from this witness (first "
                                       f"difference at {where})")
    raise ProofCheckFailed("the proof does not verify although the witness satisfies the circuit and a/b/c match "
                           "it: the proving key's tables or the backend computed something wrong")


def _sum(transfers: list[Transfer]) -> Transfer:
    kinds = {t.kind for t in transfers}
    return Transfer(sum(t.nbytes for t in transfers), sum(t.ms for t in transfers),
                    kinds.pop() if len(kinds) == 1 else MemoryKind.MIXED)


class PendingProof:
    """A proof whose device work is done: what is left runs on the host (waiting for a host
    G2 MSM, then assembling), so a caller can hand the device to the next proof first."""

    def __init__(self, pk: ProvingKey, accs: tuple, b2, rng):
        self.pk, self.accs, self.b2, self.rng = pk, accs, b2, rng

    def finish(self, timer: PhaseTimer | None = None) -> Proof:
        timer = timer if timer is not None else PhaseTimer()
        pk, (a_acc, b1_acc, l_acc, h_acc) = self.pk, self.accs
        if isinstance(self.b2, Future):
            with timer.phase(Phase.MSM_G2_WAIT):
                b2_acc = self.b2.result()
        else:
            b2_acc = self.b2
        r, s = (random_scalar(pk.curve.fr.modulus, self.rng) for _ in range(2))
        sc = pk.curve.scalar
        with timer.phase(Phase.ASSEMBLE):
            a = pk.vk.alpha_g1 + a_acc + pk.delta_g1 * sc(r)
            b2 = pk.vk.beta_g2 + b2_acc + pk.vk.delta_g2 * sc(s)
            b1 = pk.beta_g1 + b1_acc + pk.delta_g1 * sc(s)
            c = l_acc + h_acc + a * sc(s) + b1 * sc(r) - pk.delta_g1 * sc(r * s)
        return Proof(pk.curve, a, b2, c)


def upload(backend: Backend, abc, witness: np.ndarray, memory_kind: str | None = None) -> list:
    """a, b, c and the witness copied to where ``backend`` computes, each with its timed
    transfer: what ``prove_qap`` does first unless it is handed this (a prover service
    uploads the next proof's vectors while the device computes the one before)."""
    return [backend.upload(v, memory_kind) for v in (*abc, witness)]


def check_key(pk: ProvingKey, curve, num_variables: int) -> None:
    """ValueError unless ``pk`` is over ``curve`` and has a point per variable."""
    if pk.curve.name != curve.name:
        raise ValueError(f"the proving key is over {pk.curve.name}, the constraint system over {curve.name}")
    if len(pk.a_query) != num_variables:
        raise ValueError("the proving key does not match this constraint system "
                         f"({len(pk.a_query)} variables in the key, {num_variables} in the circuit)")


def prove_device(pk: ProvingKey, cs: ConstraintSystem, witness: np.ndarray, backend: Backend,
                 rng: np.random.Generator | None = None, abc=None, timer: PhaseTimer | None = None,
                 transfers: dict | None = None, memory_kind: str | None = None, uploaded=None) -> PendingProof:
    """The device part of a proof (see ``prove``): uploads, H, the MSMs. ``witness`` (and
    ``abc``) must stay valid until the returned proof is finished when the backend runs
    its G2 MSM on the host."""
    timer = timer if timer is not None else PhaseTimer()
    domain = r1cs_to_qap.domain_for(cs)
    check_key(pk, cs.curve, cs.num_variables)
    if abc is None:
        with timer.phase(Phase.WITNESS_MAP):
            abc = r1cs_to_qap.witness_map(cs, witness)
    return prove_qap(pk, domain, cs.num_instance, witness, abc, backend, rng, timer, transfers, memory_kind, uploaded)


def prove_qap(pk: ProvingKey, domain, num_instance: int, witness: np.ndarray, abc, backend: Backend,
              rng: np.random.Generator | None = None, timer: PhaseTimer | None = None,
              transfers: dict | None = None, memory_kind: str | None = None, uploaded=None) -> PendingProof:
    """The device part from a/b/c already over the key's domain: uploads (unless
    ``uploaded``, ``upload``'s result, has them there already), H in the key's basis, the
    A, B (G1, G2), L and H MSMs (L over the witness past its ``num_instance`` public
    variables, the constant one included)."""
    timer = timer if timer is not None else PhaseTimer()
    h_points = domain.size + H_BASES[pk.h_basis]
    if len(pk.h_query) != h_points:
        raise ValueError(f"the proving key has {len(pk.h_query)} H points, a domain of {domain.size} needs {h_points}")
    # A backend whose G2 MSM runs on the host (arkworks releases the GIL) starts it first,
    # so it overlaps the device's H and G1 work instead of following it.
    g2 = _host_thread().submit(backend.msm_witness, pk.b_g2_query, witness) if backend.g2_on_host else None
    k = num_instance
    with contextlib.ExitStack() as device:
        device.enter_context(backend.device_phase())
        if uploaded is None:
            with timer.phase(Phase.H2D):
                uploaded = upload(backend, abc, witness, memory_kind)
        ups = uploaded
        (a, _), (b, _), (c, _), (w, w_tr) = ups
        with timer.phase(Phase.NTT):
            h = backend.compute_h_resident(domain, a, b, c, pk.h_basis)
        with timer.phase(Phase.MSM):  # the witness's MSMs split off its 0/1 scalars; H's coefficients are dense
            jobs = [MsmJob(pk.a_query, w), MsmJob(pk.b_g1_query, w), MsmJob(pk.l_query, w[k:]),
                    MsmJob(pk.h_query, h[:h_points], witness=False)]
            if g2 is None:
                jobs.append(MsmJob(pk.b_g2_query, w))
            results = backend.msms(jobs)  # independent: a backend may run them at once
            device.close()  # the device phase ends with its last MSM
    accs, b2 = tuple(results[:4]), g2 if g2 is not None else results[4]
    if transfers is not None:
        transfers["h2d"] = _sum([t for _, t in ups[:3]])
        transfers["h2d_witness"] = w_tr
    return PendingProof(pk, accs, b2, rng)


def prove(pk: ProvingKey, cs: ConstraintSystem, witness: np.ndarray, backend: Backend,
          rng: np.random.Generator | None = None, abc=None, timer: PhaseTimer | None = None,
          transfers: dict | None = None, memory_kind: str | None = None) -> Proof:
    """A proof for ``witness``, blinded with r, s from the OS's CSPRNG (or ``rng``).
    ``abc`` passes a/b/c already synthesized (e.g. into staging memory); otherwise they are
    computed and checked here. Phases go to ``timer`` (h2d, ntt, msm, msm_g2_wait when the
    G2 MSM runs on the host, assemble); ``transfers`` receives the uploads: ``h2d`` (a/b/c)
    and ``h2d_witness``. ``memory_kind`` names the host memory of a/b/c and the witness
    for backends that cannot tell it themselves."""
    timer = timer if timer is not None else PhaseTimer()
    return prove_device(pk, cs, witness, backend, rng, abc, timer, transfers, memory_kind).finish(timer)
