"""BN254 (alt_bn128: circom's default prime, snarkjs's "bn128", Ethereum's precompiles of
EIP-196/197): r and q of 254 bits, r with 2-adicity 28, G1: y^2 = x^3 + 3, G2: y^2 = x^3 +
3/(9 + u) over Fq2 = Fq[u]/(u^2 + 1) (the D-type twist); points through
``bn254_points`` (the engine's C for the groups, arkworks for the pairing)."""
from __future__ import annotations

from proofflow.prover.curves.descriptor import Curve, PrimeField

R = 21888242871839275222246405745257275088548364400416034343698204186575808495617
Q = 21888242871839275222246405745257275088696311157297823662689037894645226208583


def _twist_b() -> tuple[int, int]:
    """3 / (9 + u) = 3 (9 - u) / 82 in Fq2."""
    inv82 = pow(82, -1, Q)
    return 27 * inv82 % Q, -3 * inv82 % Q


# through the point library the descriptor names (``Curve.library``: it imports this module)
def _pairing_check(g1s, g2s) -> bool:
    return BN254.library().pairing_check(g1s, g2s)


def _pairing(g1, g2) -> list[int]:
    return BN254.library().pairing(g1, g2)


BN254 = Curve(
    name="bn254",
    label="BN254",
    # 5 generates Fr*: the first quadratic non-residue, so snarkjs's (ffjavascript's) roots of
    # unity are these, and arkworks's GENERATOR and coset offset for this field
    fr=PrimeField(R, limbs=4, two_adicity=28, generator=5),
    fq=PrimeField(Q, limbs=4),
    fq2_non_residue=-1,
    g1_b=3,
    g2_b=_twist_b(),
    snarkjs_name="bn128",
    points="proofflow.prover.curves.bn254_points",
    pairing_check=_pairing_check,
    pairing=_pairing,
)
