"""The Groth16 verifier: one multi-pairing check through the key's curve (``Curve.pairing_check``)."""
from __future__ import annotations

from proofflow.prover.groth16.data_structures import Proof, VerifyingKey


def prepare_inputs(vk: VerifyingKey, public_inputs: list[int]):
    """gamma_abc[0] + sum x_i * gamma_abc[i+1]."""
    if len(public_inputs) != vk.num_public:
        raise ValueError(f"the verifying key takes {vk.num_public} public inputs, got {len(public_inputs)}")
    for i, x in enumerate(public_inputs):
        if not isinstance(x, int) or not 0 <= x < vk.curve.fr.modulus:
            raise ValueError(f"public input {i} is not a field element: {x!r}")
    acc = vk.gamma_abc_g1[0]
    for x, base in zip(public_inputs, vk.gamma_abc_g1[1:]):
        acc = acc + base * vk.curve.scalar(x)
    return acc


def verify(vk: VerifyingKey, public_inputs: list[int], proof: Proof) -> bool:
    """e(A, B) == e(alpha, beta) * e(inputs, gamma) * e(C, delta). A proof of another curve
    than the key's is a ValueError."""
    if proof.curve.name != vk.curve.name:
        raise ValueError(f"a {proof.curve.label} proof cannot verify under a {vk.curve.label} key")
    acc = prepare_inputs(vk, public_inputs)
    return vk.curve.pairing_check([proof.a, -vk.alpha_g1, -acc, -proof.c],
                                  [proof.b, vk.beta_g2, vk.gamma_g2, vk.delta_g2])
