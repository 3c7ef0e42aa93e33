"""Fr vector arithmetic against Python integers."""
import random

import numpy as np
import pytest

from proofflow.prover.curves.bls12_381 import BLS12_381 as CURVE
from proofflow.prover.field.fr import Fr

fr = Fr.of(CURVE)

P = fr.MODULUS
EDGE = [0, 1, 2, P - 1, P - 2, (P - 1) // 2, 1 << 64, (1 << 255) % P, 1 << 128]


@pytest.fixture(scope="module")
def operands():
    rnd = random.Random(1)
    xs = EDGE + [rnd.randrange(P) for _ in range(300)]
    ys = list(reversed(EDGE)) + [rnd.randrange(P) for _ in range(300)]
    return xs, ys


@pytest.mark.parametrize("op,ref", [
    (fr.add, lambda x, y: (x + y) % P),
    (fr.sub, lambda x, y: (x - y) % P),
    (fr.mul, lambda x, y: x * y % P),
])
def test_binary_ops_match_python_ints(operands, op, ref):
    xs, ys = operands
    # every pairing of edge values with each other as well as random pairs
    xs = xs + [a for a in EDGE for _ in EDGE]
    ys = ys + [b for _ in EDGE for b in EDGE]
    got = fr.to_ints(op(fr.from_ints(xs), fr.from_ints(ys)))
    assert got == [ref(x, y) for x, y in zip(xs, ys)]


def test_unary_ops(operands):
    xs, _ = operands
    a = fr.from_ints(xs)
    assert fr.to_ints(fr.square(a)) == [x * x % P for x in xs]
    assert fr.to_ints(fr.neg(a)) == [(-x) % P for x in xs]
    assert fr.to_ints(fr.pow_scalar_exp(a, 12345)) == [pow(x, 12345, P) for x in xs]


def test_broadcast_constant(operands):
    xs, _ = operands
    got = fr.to_ints(fr.mul(fr.from_ints(xs), fr.constant(P - 3)))
    assert got == [x * (P - 3) % P for x in xs]


def test_batch_inverse(operands):
    xs = [x for x in operands[0] if x]
    assert fr.to_ints(fr.batch_inverse(fr.from_ints(xs))) == [pow(x, -1, P) for x in xs]


def test_batch_inverse_names_the_zero():
    with pytest.raises(ZeroDivisionError, match="element 2"):
        fr.batch_inverse(fr.from_ints([3, 4, 0, 5]))


def test_montgomery_layout_is_x_times_2_256():
    # The layout shared with the GPU: limbs of x*R mod p, little-endian 64-bit words.
    x = 123456789
    limbs = fr.from_ints([x])[0]
    assert sum(int(l) << (64 * i) for i, l in enumerate(limbs)) == x * (1 << 256) % P


def test_zero_and_one_take_the_montgomery_form_of_a_product():
    # 0 and 1 are written without a product; 1 + 2^64 and 2^192 (low limb 0 or 1) are multiplied
    xs = [0, 1, 1 + (1 << 64), 1 << 192, 2, 0, 1]
    limbs = fr.from_ints(xs)
    assert [sum(int(l) << (64 * i) for i, l in enumerate(row)) for row in limbs] == [x * (1 << 256) % P for x in xs]
    assert fr.equal(limbs[1:2], fr.one())


def test_bytes_round_trip_and_canonical_check(operands):
    xs, _ = operands
    raw = b"".join(x.to_bytes(32, "little") for x in xs)
    a = fr.from_bytes_le(raw)
    assert fr.to_ints(a) == xs
    assert fr.to_bytes_le(a) == raw
    with pytest.raises(ValueError, match="not a canonical"):
        fr.from_bytes_le(P.to_bytes(32, "little"))
    with pytest.raises(ValueError, match="whole number"):
        fr.from_bytes_le(b"\x01" * 31)


def test_random_is_reduced_and_varied():
    a = fr.random(2000, np.random.default_rng(3))
    ints = fr.to_ints(a)
    assert all(0 <= x < P for x in ints) and len(set(ints)) == 2000


def test_rejects_wrong_shapes():
    with pytest.raises(TypeError):
        fr.mul(np.zeros((4, 3), np.uint64), fr.zeros(4))
    with pytest.raises(ValueError, match="expected 4 or 1"):
        fr.add(fr.zeros(4), fr.zeros(3))
