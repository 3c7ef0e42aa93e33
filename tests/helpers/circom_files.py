"""Small iden3 binary files (.r1cs, .wtns, zkey headers) written from Python values, and
random r1cs files of any size, for testing (and timing) the readers in
proofflow.prover.circom without the node toolchain."""
from __future__ import annotations

import struct

import numpy as np

from proofflow.prover.curves.bls12_381 import BLS12_381 as CURVE
from proofflow.prover.field.fr import Fr

fr = Fr.of(CURVE)

BN128_R = 0x30644E72E131A029B85045B68181585D2833E84879B9709143E1F593F0000001
BN128_Q = 0x30644E72E131A029B85045B68181585D97816A916871CA8D3C208C16D87CFD47
GOLDILOCKS = 0xFFFFFFFF00000001  # a prime circom offers (-p goldilocks) that no registered curve has


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


def chain_r1cs(n: int) -> bytes:
    """An r1cs of ``n`` constraints: x_{i+1} = x_i^2 from the public input x (wire 2) to
    the output (wire 1)."""
    constraints, prev = [], 2
    for i in range(n - 1):
        constraints.append(({prev: 1}, {prev: 1}, {3 + i: 1}))
        prev = 3 + i
    constraints.append(({prev: 1}, {0: 1}, {1: 1}))
    return r1cs(constraints, n + 2, 1, 1, 0)


def wtns(values, prime: int = fr.MODULUS) -> bytes:
    header = field(prime) + struct.pack("<I", len(values))
    return container(b"wtns", 2, [(1, header), (2, b"".join(v.to_bytes(32, "little") for v in values))])


def zkey_head(protocol: int = 1, r: int = fr.MODULUS, q: int | None = None) -> bytes:
    """A zkey's sections 1 and 2 up to the domain size (enough to be rejected early)."""
    q = CURVE.fq.modulus if q is None else q
    n8q = 48 if q.bit_length() > 256 else 32
    header = field(q, n8q) + field(r) + struct.pack("<III", 3, 1, 4)
    return container(b"zkey", 1, [(1, struct.pack("<I", protocol)), (2, header)])


def random_r1cs(n_constraints: int, n_wires: int, rng, max_terms: int = 3, n8: int = 32,
                prime: int = fr.MODULUS) -> bytes:
    """An r1cs of random constraints, built with numpy (millions in seconds): each linear
    combination 0..``max_terms`` terms of random wires (repeats possible) and random
    coefficients below 2^254, written as ``n8``-byte integers; one output, one public and
    one private input; sections in circom's order."""
    term = 4 + n8
    counts = rng.integers(0, max_terms + 1, size=3 * n_constraints)
    sizes = 4 + term * counts
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    body = np.zeros(int(sizes.sum()), dtype=np.uint8)
    body.view("<u4")[starts // 4] = counts
    lc = np.repeat(np.arange(counts.size), counts)
    first = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    at = starts[lc] + 4 + term * (np.arange(lc.size) - first[lc])  # each term's offset
    body.view("<u4")[at // 4] = rng.integers(0, n_wires, size=lc.size)
    coeffs = rng.integers(0, 256, size=(lc.size, 32), dtype=np.uint8)
    coeffs[:, 31] &= 0x3F
    body[(at + 4)[:, None] + np.arange(32)] = coeffs
    header = field(prime, n8) + struct.pack("<IIIIQI", n_wires, 1, 1, 1, n_wires, n_constraints)
    labels = np.arange(n_wires, dtype="<u8").tobytes()
    return container(b"r1cs", 1, [(2, body.tobytes()), (1, header), (3, labels)])
