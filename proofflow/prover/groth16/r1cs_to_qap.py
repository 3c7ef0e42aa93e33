"""The reduction from R1CS to a QAP over a radix-2 domain.

Row j of the (input-extended) constraint system is the evaluation point w^j: variable i's
polynomial u_i has u_i(w^j) = A[j, i], so u_i(tau) = sum_j A[j, i] L_j(tau). The prover's
H = (A(X) B(X) - C(X)) / Z(X) comes from the a/b/c evaluation vectors by NTTs, done by a
backend (``Backend.compute_h``).
"""
from __future__ import annotations

import numpy as np

from proofflow.prover.polynomial.domain import Radix2Domain
from proofflow.prover.r1cs import ConstraintSystem


def domain_for(cs: ConstraintSystem) -> Radix2Domain:
    """The QAP domain of a constraint system (the input rows included)."""
    return Radix2Domain.for_size(cs.num_constraints + cs.num_instance, cs.curve)


def evaluate_at(cs: ConstraintSystem, tau: int) -> tuple[Radix2Domain, np.ndarray, np.ndarray, np.ndarray]:
    """u_i(tau), v_i(tau), w_i(tau) for every variable i, from the Lagrange basis at tau: the
    extended system's (``with_input_constraints``), its input rows added into u directly
    rather than by a copy of A, and each Mᵀ·L without a transposed copy (``rmatvec``)."""
    domain, n, k = domain_for(cs), cs.num_constraints, cs.num_instance
    fr = cs.fr
    lag = domain.lagrange_at(tau)
    u, v, w = (m.rmatvec(lag[:n]) for m in (cs.a, cs.b, cs.c))
    fr.add(u[:k], lag[n:n + k], out=u[:k])  # input row n + i: 1 at variable i, in A only
    return domain, u, v, w


def witness_map(cs: ConstraintSystem, witness: np.ndarray, out=None):
    """The a/b/c evaluation vectors over the QAP domain, checked against the constraints.

    ``out`` may supply three domain-sized Fr buffers (pinned staging memory) to fill in
    place. Raises ``UnsatisfiedConstraint`` naming the first failing row.
    """
    ext, fr = cs.with_input_constraints, cs.fr
    n = domain_for(cs).size
    if out is None:
        out = (fr.zeros(n), fr.zeros(n), fr.zeros(n))
    for buf in out:
        fr._check(buf, "out")
        if buf.shape[0] != n:
            raise ValueError(f"a/b/c buffers must hold the domain's {n} elements, got {buf.shape[0]}")
    a, b, c = ext.evaluate(witness, out)
    cs.check(a, b, c)
    return a, b, c
