"""The Groth16 prover: H by NTTs on a backend, then the A, B (G1 and G2) and C MSMs."""
from __future__ import annotations

import secrets
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import numpy as np

from prover import curve
from prover.backend.base import Backend
from prover.field import fr
from prover.groth16 import r1cs_to_qap
from prover.groth16.data_structures import Proof, ProvingKey
from prover.r1cs import ConstraintSystem
from prover.timing import PhaseTimer


@lru_cache(maxsize=1)
def _host_thread() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="proofflow-g2")


def random_scalar(rng: np.random.Generator | None = None) -> int:
    """Uniform in Fr: from the OS's CSPRNG, or from ``rng`` for reproducible tests
    (512 random bits reduced, so the bias is ~2^-257)."""
    raw = rng.bytes(64) if rng is not None else secrets.token_bytes(64)
    return int.from_bytes(raw, "little") % fr.MODULUS


def prove(pk: ProvingKey, cs: ConstraintSystem, witness: np.ndarray, backend: Backend,
          rng: np.random.Generator | None = None, abc=None, timer: PhaseTimer | None = None) -> Proof:
    """A proof for ``witness``, blinded with r, s from the OS's CSPRNG (or ``rng``).
    ``abc`` passes a/b/c already synthesized (e.g. into staging memory); otherwise they are
    computed and checked here."""
    timer = timer or PhaseTimer()
    domain = r1cs_to_qap.domain_for(cs)
    if pk.a_query.xy.shape[0] != cs.num_variables or len(pk.h_query) != domain.size - 1:
        raise ValueError("the proving key does not match this constraint system "
                         f"({len(pk.a_query)} variables and {len(pk.h_query) + 1} domain points in the key, "
                         f"{cs.num_variables} and {domain.size} in the circuit)")
    if abc is None:
        with timer.phase("witness_map"):
            abc = r1cs_to_qap.witness_map(cs, witness)
    # A backend whose G2 MSM runs on the host (arkworks releases the GIL) starts it first,
    # so it overlaps the device's H and G1 work instead of following it.
    g2 = _host_thread().submit(backend.msm_g2, pk.b_g2_query, witness) if backend.g2_on_host else None
    with timer.phase("ntt"):
        h = backend.compute_h(domain, *abc)[: domain.size - 1]
    r, s = random_scalar(rng), random_scalar(rng)
    sc = curve.scalar
    with timer.phase("msm"):
        private = witness[cs.num_instance:]
        a_acc = backend.msm_g1(pk.a_query, witness)
        b1_acc = backend.msm_g1(pk.b_g1_query, witness)
        l_acc = backend.msm_g1(pk.l_query, private)
        h_acc = backend.msm_g1(pk.h_query, np.ascontiguousarray(h))
    with timer.phase("msm_g2_wait" if g2 else "msm"):
        b2_acc = g2.result() if g2 else backend.msm_g2(pk.b_g2_query, witness)
    with timer.phase("assemble"):
        a = pk.vk.alpha_g1 + a_acc + pk.delta_g1 * sc(r)
        b2 = pk.vk.beta_g2 + b2_acc + pk.vk.delta_g2 * sc(s)
        b1 = pk.beta_g1 + b1_acc + pk.delta_g1 * sc(s)
        c = l_acc + h_acc + a * sc(s) + b1 * sc(r) - pk.delta_g1 * sc(r * s)
    return Proof(a, b2, c)
