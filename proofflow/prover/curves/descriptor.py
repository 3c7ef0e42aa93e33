"""A curve as the engine needs it: the scalar field Fr (the circuits' field, NTT domains)
and the base field Fq (point coordinates), both in the kernels' Montgomery form; the
groups' equations (short Weierstrass with a = 0: G1 over Fq, G2 over Fq2 = Fq[u]/(u^2 - β),
the sextic twist); the point encodings; its names in circom and snarkjs; the library of
its points and its pairing check.

Encodings, all derived from Fq's width (``PrimeField.bytes``):
- xy-LE (key tables, the GPU's uploads): x || y little-endian, G2's coordinates c0 || c1;
  the point at infinity is all zeros;
- compressed (proofs, verifying keys, key tables by default): x alone with the flags in its top
  bits, as the curve's point library writes it (``Compression``), a coordinate's width;
- snarkjs: decimal strings in its JSON, coordinates in Montgomery form in its zkeys.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable, Sequence

GROUPS = ("g1", "g2")


@dataclass(frozen=True)
class PrimeField:
    """A prime field held in ``limbs`` little-endian 64-bit limbs, in Montgomery form with
    R = 2^(64 limbs). ``two_adicity`` and ``generator`` matter for a scalar field (its radix-2
    domains): 2^two_adicity divides p - 1, and the generator is a quadratic non-residue, so
    g^((p-1)/2^k) has order exactly 2^k."""
    modulus: int
    limbs: int
    two_adicity: int = 0
    generator: int = 0

    def __post_init__(self):
        p = self.modulus
        if p < 3 or p % 2 == 0 or p.bit_length() > 64 * self.limbs - 1:
            raise ValueError(f"0x{p:x} is not an odd prime below 2^{64 * self.limbs - 1} (the kernels' spare bit)")
        if self.two_adicity and ((p - 1) >> self.two_adicity << self.two_adicity != p - 1
                                 or (p - 1) >> self.two_adicity & 1 == 0):
            raise ValueError(f"2^{self.two_adicity} is not the largest power of two dividing p - 1")
        if self.generator and pow(self.generator, (p - 1) // 2, p) != p - 1:
            raise ValueError(f"{self.generator} is a quadratic residue: its powers miss half the field")

    @property
    def bytes(self) -> int:
        return 8 * self.limbs

    @property
    def montgomery_r(self) -> int:
        """R mod p: one in Montgomery form."""
        return (1 << (64 * self.limbs)) % self.modulus

    @property
    def montgomery_r2(self) -> int:
        """R^2 mod p: a Montgomery product by it takes a value into Montgomery form."""
        return self.montgomery_r ** 2 % self.modulus

    def montgomery_inverse(self, word_bits: int) -> int:
        """-p^-1 mod 2^word_bits, the reduction's factor (64-bit words on the CPU, 32 on the GPU)."""
        return -pow(self.modulus, -1, 1 << word_bits) % (1 << word_bits)

    def root_of_unity(self, log_n: int) -> int:
        """A primitive 2^log_n-th root of unity: g^((p-1)/2^log_n)."""
        if not 0 <= log_n <= self.two_adicity:
            raise ValueError(f"log_n must be in 0..{self.two_adicity}, got {log_n}")
        return pow(self.generator, (self.modulus - 1) >> log_n, self.modulus)

    def first_non_residue(self) -> int:
        """The first quadratic non-residue from 2 up: ffjavascript's (snarkjs's) generator of
        its roots of unity."""
        return next(x for x in range(2, self.modulus) if pow(x, (self.modulus - 1) // 2, self.modulus) != 1)



@dataclass(frozen=True)
class Compression:
    """How a curve's point library writes a compressed point: x alone, G2's x = c0 + c1 u as
    the one number c0 + c1 2^(8w) (w: Fq's bytes), in little-endian bytes or, ``big_endian``,
    those bytes reversed (zcash's c1 || c0, each big-endian); flags in the top bits of its most
    significant byte, where q leaves them free: ``infinity`` at the point at infinity (x zero),
    ``larger`` when y is the larger of y and -y (as canonical integers; G2's c1 compared
    first, then c0), ``marker`` on every point (zcash's "compressed" bit; 0: none)."""
    big_endian: bool = False
    infinity: int = 0x40
    larger: int = 0x80
    marker: int = 0

    @property
    def flags(self) -> int:
        return self.infinity | self.larger | self.marker


ARKWORKS = Compression()  # arkworks's own (BN254's library): little-endian, y's flag the top bit
ZCASH = Compression(big_endian=True, infinity=0x40, larger=0x20, marker=0x80)  # BLS12-381's


@dataclass(frozen=True)
class Curve:
    """One pairing-friendly curve. ``points`` names the Python module of its points, with
    py-arkworks-bls12381's API: G1Point and G2Point (the generator by calling the class,
    ``identity()``, ``from_xy_bytes_le``/``_unchecked_le``, ``to_xy_bytes_le``,
    ``from_compressed_bytes``, ``to_compressed_bytes``, ``multiexp_unchecked``, + and * by a
    Scalar) and Scalar (``from_le_bytes``). ``pairing_check(g1s, g2s)``: whether
    prod e(g1s[i], g2s[i]) is one; ``pairing(g1, g2)``: e(g1, g2) as its 12 Fq coefficients in
    the tower Fq12 = Fq6[w], Fq6 = Fq2[v], Fq2 = Fq[u], in order c0.c0.c0, c0.c0.c1, c0.c1.c0,
    ..., c1.c2.c1 (snarkjs's vk_alphabeta_12). Both are imported only when points are made.

    A library may also work on a table's rows, no point objects made: the point classes'
    ``multiexp_xy_le(rows, scalars)`` ((n, xy_bytes) uint8 rows, (n, 4) uint64 canonical
    scalars), ``multiples_xy_le(scalars)`` (the generator's multiples, as rows) and
    ``first_off_curve_xy_le(rows)``; the CPU MSMs, the setup and the zkey reader use them
    where present (``points.sums_rows``)."""
    name: str  # what runs, keys, bundles and the timing store record
    label: str  # as people write it
    fr: PrimeField
    fq: PrimeField
    fq2_non_residue: int  # β: Fq2 = Fq[u]/(u^2 - β)
    g1_b: int  # G1: y^2 = x^3 + b over Fq
    g2_b: tuple[int, int]  # G2: y^2 = x^3 + b' over Fq2, b' = c0 + c1 u
    snarkjs_name: str  # circom's -p and the "curve" of snarkjs's JSON files
    points: str
    pairing_check: Callable[[Sequence, Sequence], bool]
    pairing: Callable[[object, object], list[int]]
    compression: Compression = ARKWORKS  # its library's compressed points

    def coordinate_bytes(self, group: str) -> int:
        """A coordinate of ``group``'s points: an Fq element, or an Fq2 one."""
        return self.fq.bytes * (1, 2)[GROUPS.index(group)]

    def xy_bytes(self, group: str) -> int:
        return 2 * self.coordinate_bytes(group)

    def compressed_bytes(self, group: str) -> int:
        return self.coordinate_bytes(group)

    @property
    def proof_bytes(self) -> int:
        """A Groth16 proof, compressed: A (G1) || B (G2) || C (G1)."""
        return 2 * self.compressed_bytes("g1") + self.compressed_bytes("g2")

    @property
    def max_log2(self) -> int:
        """The largest radix-2 domain of its scalar field."""
        return self.fr.two_adicity

    @property
    def key_format(self) -> str:
        """The format of its proving and verifying keys and bundle manifests."""
        return f"proofflow-groth16-{self.label.lower()}/1"

    def library(self):
        """Its point library's module."""
        return importlib.import_module(self.points)

    def point_class(self, group: str):
        """G1Point or G2Point of its point library."""
        return getattr(self.library(), {"g1": "G1Point", "g2": "G2Point"}[group])

    def scalar(self, x: int):
        """x mod r as its point library's Scalar."""
        return self.library().Scalar.from_le_bytes((x % self.fr.modulus).to_bytes(self.fr.bytes, "little"))
