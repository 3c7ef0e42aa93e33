"""Groth16 proofs with a snarkjs zkey, on any backend.

The steps are snarkjs's: a and b over the domain by the zkey's coefficients (its extra A
rows included), c = a·b point by point, H in the zkey's odd-coset basis (groth16/odd_coset.py), then the
A, B1, B2, C and H MSMs and the engine's own assembly with fresh r, s. With the r1cs at
hand, the key is checked against it and the witness against its constraints first, so a
bad witness is named by its first failing constraint rather than by a proof that does
not verify.
"""
from __future__ import annotations

import numpy as np

from proofflow.prover.backend.base import Backend
from proofflow.prover.backend.by_name import get_backend
from proofflow.prover.circom.errors import KeyMismatch
from proofflow.prover.circom.r1cs import R1cs
from proofflow.prover.circom.zkey import ZKey
from proofflow.prover.field.fr import Fr
from proofflow.prover.groth16 import verifier
from proofflow.prover.groth16.data_structures import Proof, VerifyingKey
from proofflow.prover.groth16 import prover as groth16_prover
from proofflow.prover.errors import ProofCheckFailed
from proofflow.prover.polynomial.domain import Radix2Domain
from proofflow.prover.timing import PhaseTimer
from proofflow.phases import Phase


def public_signals(zkey: ZKey, witness: np.ndarray) -> list[int]:
    """What public.json lists: the witness's wires 1..nPublic (outputs, then public inputs)."""
    return Fr.of(zkey.curve).to_ints(witness[1:zkey.n_public + 1])


def zkey_abc(zkey: ZKey, witness: np.ndarray, out: tuple | None = None) -> tuple:
    """snarkjs's a/b/c over the zkey's domain: a and b by its coefficients (its extra A rows
    included), c = a·b point by point; into ``out`` (three domain-sized Fr vectors, e.g. a
    shared staging segment's) when given."""
    fr = Fr.of(zkey.curve)
    a, b, c = out if out is not None else (fr.zeros(zkey.domain_size) for _ in range(3))
    zkey.a.matvec(witness, a)
    zkey.b.matvec(witness, b)
    return a, b, fr.mul(a, b, out=c)


def check(vk: VerifyingKey, n_public: int, witness: np.ndarray, proof: Proof, r1cs_checked: bool = False) -> None:
    """Raise ProofCheckFailed unless ``proof`` verifies against the zkey's verifying key for
    the witness's public signals; the message says what can be at fault (with the r1cs
    checked first, only the zkey)."""
    if verifier.verify(vk, Fr.of(vk.curve).to_ints(witness[1:n_public + 1]), proof):
        return
    if r1cs_checked:
        cause = ("the witness satisfies the r1cs, so the zkey's points are corrupt or were set up for a "
                 "circuit that differs from this r1cs in C (which a zkey does not store)")
    else:
        cause = "the witness does not satisfy the circuit, or the zkey is corrupt (pass the r1cs to tell which)"
    raise ProofCheckFailed(f"the proof does not verify against the zkey's verifying key: {cause}")


def prove(zkey: ZKey, witness: np.ndarray, backend: Backend | None = None, r1cs: R1cs | None = None,
          rng: np.random.Generator | None = None, timer: PhaseTimer | None = None) -> Proof:
    """A proof for ``witness`` (an Fr vector of the zkey's curve, e.g. from ``read_wtns``) that snarkjs accepts.
    r, s come from the OS's CSPRNG, or from ``rng`` for reproducible tests. Raises
    KeyMismatch or UnsatisfiedConstraint for inputs that do not fit, and ProofCheckFailed
    should the finished proof not verify against the zkey's own verifying key."""
    backend = backend or get_backend("cpu")
    timer = timer if timer is not None else PhaseTimer()
    if r1cs is not None:
        zkey.check_matches(r1cs)
    if witness.shape[0] != zkey.n_vars:
        raise KeyMismatch("the number of signals", f"zkey {zkey.n_vars}, witness {witness.shape[0]}", "the witness")
    if r1cs is not None:  # the engine's own path: a/b/c by the r1cs, each constraint checked
        proof = groth16_prover.prove(zkey.pk, r1cs.cs, witness, backend, rng, timer=timer)
    else:  # the zkey alone, as snarkjs: a and b by its coefficients, c = a·b
        with timer.phase(Phase.WITNESS_MAP):
            abc = zkey_abc(zkey, witness)
        proof = groth16_prover.prove_qap(zkey.pk, Radix2Domain.for_size(zkey.domain_size, zkey.curve),
                                         zkey.n_public + 1, witness, abc, backend, rng, timer).finish(timer)
    with timer.phase(Phase.CHECK):
        check(zkey.vk, zkey.n_public, witness, proof, r1cs_checked=r1cs is not None)
    return proof
