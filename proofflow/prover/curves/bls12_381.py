"""BLS12-381 (the Zcash and Ethereum curve): r of 255 bits with 2-adicity 32, q of 381 bits,
G1: y^2 = x^3 + 4, G2: y^2 = x^3 + 4(1 + u) over Fq2 = Fq[u]/(u^2 + 1); points through
py-arkworks-bls12381."""
from __future__ import annotations

from proofflow.prover.curves.descriptor import ZCASH, Curve, PrimeField


def _pairing_check(g1s, g2s) -> bool:
    from py_arkworks_bls12381 import GT
    return bool(GT.pairing_check(g1s, g2s))


def _pairing(g1, g2) -> list[int]:
    """e(g1, g2)'s 12 Fq coefficients: the library prints an Fq12 as its arkworks
    serialization in hex, each coefficient 48 bytes little-endian, in tower order."""
    from py_arkworks_bls12381 import GT
    raw = bytes.fromhex(str(GT.pairing(g1, g2)))
    return [int.from_bytes(raw[i:i + 48], "little") for i in range(0, len(raw), 48)]


BLS12_381 = Curve(
    name="bls12_381",
    label="BLS12-381",
    # 7 generates Fr*: a quadratic non-residue, and the coset offset arkworks uses too
    fr=PrimeField(0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001, limbs=4, two_adicity=32,
                  generator=7),
    fq=PrimeField(0x1A0111EA397FE69A4B1BA7B6434BACD764774B84F38512BF6730D2A0F6B0F6241EABFFFEB153FFFFB9FEFFFFFFFFAAAB,
                  limbs=6),
    fq2_non_residue=-1,
    g1_b=4,
    g2_b=(4, 4),
    snarkjs_name="bls12381",
    points="py_arkworks_bls12381",
    pairing_check=_pairing_check,
    pairing=_pairing,
    compression=ZCASH,
)
