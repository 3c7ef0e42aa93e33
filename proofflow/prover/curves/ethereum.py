"""BN254 points and Groth16 proofs as Ethereum takes them: the precompiles of EIP-196
(G1 addition and multiplication) and EIP-197 (the pairing check), and the Groth16 verifier
contract snarkjs exports, whose ``verifyProof`` takes the words ``solidity_calldata`` prints.

Every coordinate is a 32-byte big-endian word. G1 is (x, y); G2 is ((x.c1, x.c0), (y.c1,
y.c0)): an Fq2 element c0 + c1 u with its u coefficient first, the reverse of the xy-LE
and snarkjs's JSON order. The point at infinity is all zeros (EIP-196's encoding, where
snarkjs's JSON writes G1's as (0, 1, 0))."""
from __future__ import annotations

from proofflow.prover.curves.bn254 import BN254
from proofflow.prover.curves.descriptor import Curve

WORD = 32


def _bn254(curve: Curve) -> None:
    if curve.name != BN254.name:
        raise ValueError(f"Ethereum verifies BN254 points, not {curve.label}'s")


def _coordinates(point) -> list[int]:
    raw = point.to_xy_bytes_le()
    return [int.from_bytes(raw[i:i + WORD], "little") for i in range(0, len(raw), WORD)]


def g1_words(point) -> tuple[int, int]:
    x, y = _coordinates(point)
    return x, y


def g2_words(point) -> tuple[tuple[int, int], tuple[int, int]]:
    x0, x1, y0, y1 = _coordinates(point)
    return (x1, x0), (y1, y0)


def _be(*words: int) -> bytes:
    return b"".join(w.to_bytes(WORD, "big") for w in words)


def g1_to_bytes(point) -> bytes:
    """64 bytes: x || y."""
    return _be(*g1_words(point))


def g2_to_bytes(point) -> bytes:
    """128 bytes: x.c1 || x.c0 || y.c1 || y.c0."""
    (x1, x0), (y1, y0) = g2_words(point)
    return _be(x1, x0, y1, y0)


def _words(data: bytes, count: int, what: str) -> list[int]:
    if len(data) != count * WORD:
        raise ValueError(f"a {what} in Ethereum's encoding is {count * WORD} bytes, got {len(data)}")
    return [int.from_bytes(data[i:i + WORD], "big") for i in range(0, len(data), WORD)]


def _le(*coords: int) -> bytes:
    for c in coords:
        if c >= BN254.fq.modulus:
            raise ValueError("a coordinate is not below BN254's base field prime")
    return b"".join(c.to_bytes(WORD, "little") for c in coords)


def g1_from_bytes(data: bytes):
    """The G1 point of 64 bytes x || y, checked on the curve."""
    x, y = _words(data, 2, "G1 point")
    return BN254.point_class("g1").from_xy_bytes_le(_le(x, y))


def g2_from_bytes(data: bytes):
    """The G2 point of 128 bytes x.c1 || x.c0 || y.c1 || y.c0, checked on the twist and
    in the subgroup."""
    x1, x0, y1, y0 = _words(data, 4, "G2 point")
    return BN254.point_class("g2").from_xy_bytes_le(_le(x0, x1, y0, y1))


def _hex(word: int) -> str:
    return f'"0x{word:064x}"'


def solidity_calldata(proof, public_inputs: list[int]) -> str:
    """The arguments of the exported verifier's ``verifyProof(a, b, c, input)``, as
    ``snarkjs zkey export soliditycalldata`` prints them: each word 0x and 64 hex digits in
    quotes, G2's coordinates c1 first."""
    _bn254(proof.curve)
    (ax, ay), ((bx1, bx0), (by1, by0)), (cx, cy) = g1_words(proof.a), g2_words(proof.b), g1_words(proof.c)
    inputs = ",".join(_hex(x) for x in public_inputs)
    return (f"[{_hex(ax)}, {_hex(ay)}],[[{_hex(bx1)}, {_hex(bx0)}],[{_hex(by1)}, {_hex(by0)}]],"
            f"[{_hex(cx)}, {_hex(cy)}],[{inputs}]")
