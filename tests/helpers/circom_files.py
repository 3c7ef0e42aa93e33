"""Small iden3 binary files (.r1cs, .wtns, zkey headers) written from Python values, for
testing the readers in proofflow.prover.circom without the node toolchain."""
from __future__ import annotations

import struct

from proofflow.prover.curves.bls12_381 import BLS12_381 as CURVE
from proofflow.prover.field.fr import Fr

fr = Fr.of(CURVE)

BN128_R = 0x30644E72E131A029B85045B68181585D2833E84879B9709143E1F593F0000001
BN128_Q = 0x30644E72E131A029B85045B68181585D97816A916871CA8D3C208C16D87CFD47


def container(magic: bytes, version: int, sections: list[tuple[int, bytes]]) -> bytes:
    out = [magic, struct.pack("<II", version, len(sections))]
    for sid, body in sections:
        out += [struct.pack("<IQ", sid, len(body)), body]
    return b"".join(out)


def field(prime: int, n8: int = 32) -> bytes:
    return struct.pack("<I", n8) + prime.to_bytes(n8, "little")


def lc(terms: dict[int, int]) -> bytes:
    return struct.pack("<I", len(terms)) + b"".join(
        struct.pack("<I", wire) + (c % fr.MODULUS).to_bytes(32, "little") for wire, c in terms.items())


def r1cs(constraints, n_wires: int, n_out: int, n_pub: int, n_prv: int, prime: int = fr.MODULUS) -> bytes:
    """``constraints``: (A, B, C) dicts of wire -> coefficient. Written as circom does: the
    constraints section first, then the header, then a wire-to-label map."""
    header = field(prime) + struct.pack("<IIIIQI", n_wires, n_out, n_pub, n_prv, n_wires, len(constraints))
    body = b"".join(lc(a) + lc(b) + lc(c) for a, b, c in constraints)
    labels = b"".join(struct.pack("<Q", i) for i in range(n_wires))
    return container(b"r1cs", 1, [(2, body), (1, header), (3, labels)])


def wtns(values, prime: int = fr.MODULUS) -> bytes:
    header = field(prime) + struct.pack("<I", len(values))
    return container(b"wtns", 2, [(1, header), (2, b"".join(v.to_bytes(32, "little") for v in values))])


def zkey_head(protocol: int = 1, r: int = fr.MODULUS, q: int | None = None) -> bytes:
    """A zkey's sections 1 and 2 up to the domain size (enough to be rejected early)."""
    q = CURVE.fq.modulus if q is None else q
    n8q = 48 if q.bit_length() > 256 else 32
    header = field(q, n8q) + field(r) + struct.pack("<III", 3, 1, 4)
    return container(b"zkey", 1, [(1, struct.pack("<I", protocol)), (2, header)])
