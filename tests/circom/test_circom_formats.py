"""The circom readers, the JSON forms and the H basis on small inputs, without node."""
from __future__ import annotations

import random

import numpy as np
import pytest

import circom_files
from proofflow.prover import circom
from proofflow.prover.backend.by_name import get_backend
from proofflow.prover.circom import encoding, snarkjs_json
from proofflow.prover.curves.bls12_381 import BLS12_381 as CURVE
from proofflow.prover.field.fr import Fr
from proofflow.prover.points import PointTable
from proofflow.prover.groth16 import odd_coset
from proofflow.prover.groth16.data_structures import Proof, VerifyingKey
from proofflow.prover.polynomial.domain import Radix2Domain

fr = Fr.of(CURVE)

P = fr.MODULUS
# out = x*y (public), z = out + 3 (private): wires 0 one, 1 out, 2 x (public), 3 y, 4 z
CONSTRAINTS = [({2: 1}, {3: 1}, {1: 1}), ({0: 3, 1: 1}, {0: 1}, {4: 1}), ({2: 2}, {3: 5}, {4: 10, 0: -30})]


def _witness(x: int, y: int) -> list[int]:
    out = x * y % P
    return [1, out, x, y, (out + 3) % P]


def _write(tmp_path, name: str, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_r1cs_reads_in_any_section_order_into_the_engines_layout(tmp_path):
    r = circom.read_r1cs(_write(tmp_path, "c.r1cs", circom_files.r1cs(CONSTRAINTS, 5, 1, 1, 1)))
    assert (r.n_wires, r.n_public, r.n_constraints, r.n_prv_in) == (5, 2, 3, 1)
    assert (r.cs.num_public, r.cs.num_variables, r.cs.num_instance) == (2, 5, 3)
    dense = [[[0] * 5 for _ in range(3)] for _ in range(3)]
    for m, matrix in enumerate((r.cs.a, r.cs.b, r.cs.c)):
        coeffs = fr.to_ints(matrix.coeffs)
        for row, col, c in zip(matrix.row_ids(), matrix.indices, coeffs):
            dense[m][row][col] = c
    for i, constraint in enumerate(CONSTRAINTS):
        for m in range(3):
            assert dense[m][i] == [constraint[m].get(w, 0) % P for w in range(5)]
    w = fr.from_ints(_witness(6, 7))
    r.cs.check(*r.cs.evaluate(w))


def test_r1cs_check_names_the_first_failing_constraint(tmp_path):
    r = circom.read_r1cs(_write(tmp_path, "c.r1cs", circom_files.r1cs(CONSTRAINTS, 5, 1, 1, 1)))
    values = _witness(6, 7)
    values[4] += 1  # z: breaks constraints 1 and 2
    with pytest.raises(circom.UnsatisfiedConstraint) as exc:
        r.cs.check(*r.cs.evaluate(fr.from_ints(values)))
    assert exc.value.index == 1


def test_r1cs_errors_name_the_section(tmp_path):
    bad_wire = [({7: 1}, {0: 1}, {0: 1})]
    with pytest.raises(circom.CorruptFile, match="section 2: constraint 0 uses wire 7, beyond the header's 5 wires"):
        circom.read_r1cs(_write(tmp_path, "w.r1cs", circom_files.r1cs(bad_wire, 5, 1, 1, 1)))
    data = bytearray(circom_files.r1cs(CONSTRAINTS, 5, 1, 1, 1))
    first_coefficient = 12 + 12 + 4 + 4
    data[first_coefficient:first_coefficient + 32] = P.to_bytes(32, "little")
    with pytest.raises(circom.CorruptFile, match="section 2: coefficient 0 is not below the field's prime"):
        circom.read_r1cs(_write(tmp_path, "p.r1cs", bytes(data)))
    with pytest.raises(circom.WrongField, match="made for the Goldilocks field, not the BLS12-381 scalar field or "
                                                "the BN254 scalar field"):
        circom.read_r1cs(_write(tmp_path, "g.r1cs", circom_files.r1cs(CONSTRAINTS, 5, 1, 1, 1,
                                                                      prime=circom_files.GOLDILOCKS)))
    bn128 = _write(tmp_path, "b.r1cs", circom_files.r1cs(CONSTRAINTS, 5, 1, 1, 1, prime=circom_files.BN128_R))
    with pytest.raises(circom.WrongField, match="made for the BN254 scalar field, not the BLS12-381 scalar field"):
        circom.read_r1cs(bn128, CURVE)


def test_container_errors(tmp_path):
    good = circom_files.wtns(_witness(2, 3))
    cases = [
        (b"r1cs" + good[4:], "not a .wtns file"),
        (good[:4] + (9).to_bytes(4, "little") + good[8:], "unsupported .wtns version 9"),
        (good[:8], "too short"),
        (good[:14], "the section table ends after 0 of 2 sections"),
        (good[:-1], "section 2: truncated: declares 160 bytes, 159 remain"),
        (good + b"\0", "1 bytes after the last of its 2 sections"),
        (circom_files.container(b"wtns", 2, [(1, circom_files.field(P) + (5).to_bytes(4, "little"))]),
         r"section 2: missing \(the witness values\)"),
        (circom_files.container(b"wtns", 2, [(1, b""), (1, b""), (2, b"")]), r"section 1: appears 2 times"),
    ]
    for i, (data, message) in enumerate(cases):
        path = _write(tmp_path, f"{i}.wtns", data)
        with pytest.raises(circom.CorruptFile, match=message) as exc:
            circom.read_wtns(path, CURVE)
        assert str(path) in str(exc.value)


def test_wtns_values_and_errors(tmp_path):
    values = _witness(11, 13)
    assert fr.to_ints(circom.read_wtns(_write(tmp_path, "w.wtns", circom_files.wtns(values)), CURVE)) == values
    with pytest.raises(circom.WrongField, match="made for the BN254 scalar field, not the BLS12-381 scalar field"):
        circom.read_wtns(_write(tmp_path, "b.wtns", circom_files.wtns(values, prime=circom_files.BN128_R)), CURVE)
    with pytest.raises(circom.CorruptFile, match="section 2: witness value 3 is not below the field's prime"):
        circom.read_wtns(_write(tmp_path, "r.wtns", circom_files.wtns([1, 2, 3, P])), CURVE)
    with pytest.raises(circom.CorruptFile, match="the constant one"):
        circom.read_wtns(_write(tmp_path, "o.wtns", circom_files.wtns([2, 2])), CURVE)


def test_zkey_of_another_curve_or_protocol(tmp_path):
    with pytest.raises(circom.WrongField, match="made for the Goldilocks field, not the BLS12-381 scalar field"):
        circom.read_zkey(_write(tmp_path, "g.zkey", circom_files.zkey_head(r=circom_files.GOLDILOCKS)))
    # BN254's scalar field with BLS12-381's base field: the base field is named
    with pytest.raises(circom.WrongField, match="made for the BLS12-381 base field, not the BN254 base field"):
        circom.read_zkey(_write(tmp_path, "b.zkey", circom_files.zkey_head(r=circom_files.BN128_R)))
    with pytest.raises(circom.CorruptFile, match="section 1: protocol 2 is not Groth16"):
        circom.read_zkey(_write(tmp_path, "p.zkey", circom_files.zkey_head(protocol=2)))


def _montgomery(xy: bytes) -> bytes:
    return b"".join((int.from_bytes(xy[i:i + 48], "little") * (1 << 384) % CURVE.fq.modulus).to_bytes(48, "little")
                    for i in range(0, len(xy), 48))


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_zkey_points_decode_from_montgomery_form(group):
    rnd = random.Random(3)
    g = CURVE.point_class(group)()
    points = [g * CURVE.scalar(rnd.randrange(P)) for _ in range(5)] + [CURVE.point_class(group).identity()]
    raw = b"".join(_montgomery(p.to_xy_bytes_le()) for p in points)
    table = encoding.points_from_montgomery(CURVE, raw, group, "k.zkey", 5, "A")
    assert table.points() == points
    assert not table.xy[-1].any()  # infinity: all zeros in both encodings


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_point_tables_convert_to_and_from_montgomery_form_as_python_ints_do(group):
    """The C kernel against Python ints, both ways, with a coordinate at q named by its point."""
    rnd = random.Random(5)
    width = CURVE.xy_bytes(group)
    coords = [0, 1, CURVE.fq.modulus - 1] + [rnd.randrange(CURVE.fq.modulus) for _ in range(3 * width // 48 * 20 - 3)]
    raw = b"".join(c.to_bytes(48, "little") for c in coords)
    table = PointTable(CURVE, group, np.frombuffer(raw, dtype=np.uint8).reshape(-1, width).copy())
    mont = encoding.points_to_montgomery(table)
    assert mont.tobytes() == b"".join((c * (1 << 384) % CURVE.fq.modulus).to_bytes(48, "little") for c in coords)
    back = encoding.points_from_montgomery(CURVE, mont.tobytes(), group, "k.zkey", 5, "A")
    assert back.xy.tobytes() == raw
    bad = bytearray(mont.tobytes())
    bad[width * 7:width * 7 + 48] = CURVE.fq.modulus.to_bytes(48, "little")
    with pytest.raises(circom.CorruptFile, match="section 5: A point 7 has a coordinate not below the base field"):
        encoding.points_from_montgomery(CURVE, bytes(bad), group, "k.zkey", 5, "A")


def test_zkey_coefficients_hold_c_times_r_squared():
    values = [0, 1, 2, P - 1, 123456789]
    r2 = (1 << 256) ** 2
    raw = b"".join((c * r2 % P).to_bytes(32, "little") for c in values)
    assert fr.equal(encoding.fr_from_zkey_coefficients(CURVE, raw, "k.zkey", 4), fr.from_ints(values))


def test_snarkjs_roots_come_from_the_smallest_non_residue():
    """ffjavascript takes the first quadratic non-residue from 2 up; for BLS12-381's r it is 5."""
    legendre = [pow(g, (P - 1) // 2, P) for g in range(2, 6)]
    assert legendre[:3] == [1, 1, 1] and legendre[3] == P - 1
    assert CURVE.fr.first_non_residue() == 5


@pytest.mark.parametrize("log_n", [0, 1, 2, 4])
def test_h_odd_coset_matches_a_direct_evaluation(log_n):
    """A·B − C at snarkjs's odd points, against interpolation and evaluation in Python ints."""
    n = 1 << log_n
    rnd = random.Random(log_n)
    a, b = [rnd.randrange(P) for _ in range(n)], [rnd.randrange(P) for _ in range(n)]
    c = [x * y % P for x, y in zip(a, b)]
    w = odd_coset.snarkjs_root_of_unity(CURVE, log_n)
    g = odd_coset.snarkjs_root_of_unity(CURVE, log_n + 1)
    n_inv = pow(n, -1, P)

    def at(values, x):  # the polynomial through (w^j, values[j]), evaluated at x
        coeffs = [n_inv * sum(v * pow(w, -j * k, P) for j, v in enumerate(values)) % P for k in range(n)]
        return sum(cf * pow(x, k, P) for k, cf in enumerate(coeffs)) % P

    points = [g * pow(w, i, P) % P for i in range(n)]
    expected = [(at(a, x) * at(b, x) - at(c, x)) % P for x in points]
    fa, fb = fr.from_ints(a), fr.from_ints(b)
    h = odd_coset.h_odd_coset(get_backend("cpu").ntt, Radix2Domain.for_size(n, CURVE), fa, fb)
    assert fr.to_ints(h) == expected
    assert fr.to_ints(fa) == a and fr.to_ints(fb) == b  # inputs untouched


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_json_points_round_trip(group):
    g = CURVE.point_class(group)()
    for p in (g * CURVE.scalar(987654321), CURVE.point_class(group).identity()):
        obj = snarkjs_json.point_to_json(CURVE, p, group)
        assert snarkjs_json.point_from_json(CURVE, "x.json", "pt", group, obj) == p
    assert snarkjs_json.point_to_json(CURVE, g, group)[-1] == (["1", "0"] if group == "g2" else "1")


def test_json_errors_name_the_field(tmp_path):
    g1 = snarkjs_json.point_to_json(CURVE, CURVE.point_class("g1")(), "g1")
    with pytest.raises(circom.CorruptFile, match="pi_a: a string of 1 character is not a non-negative decimal number"):
        snarkjs_json.point_from_json(CURVE, "p.json", "pi_a", "g1", ["x", g1[1], "1"])
    with pytest.raises(circom.CorruptFile, match="pi_a: .* not below the base field's prime"):
        snarkjs_json.point_from_json(CURVE, "p.json", "pi_a", "g1", [str(CURVE.fq.modulus), g1[1], "1"])
    with pytest.raises(circom.CorruptFile, match="pi_a: is not in affine form"):
        snarkjs_json.point_from_json(CURVE, "p.json", "pi_a", "g1", [*g1[:2], "2"])
    proof = _write(tmp_path, "proof.json", b'{"protocol": "groth16", "curve": "bls12377"}')
    with pytest.raises(circom.WrongField, match="made for the curve 'bls12377', not the curve 'bls12381' or the "
                                                "curve 'bn128'"):
        snarkjs_json.read_proof(proof)
    proof = _write(tmp_path, "proof2.json", b'{"protocol": "groth16", "curve": "bls12381"}')
    with pytest.raises(circom.CorruptFile, match="pi_a: missing"):
        snarkjs_json.read_proof(proof)


def test_public_values_at_or_above_r_are_rejected_not_reduced():
    g1, g2 = CURVE.point_class("g1")(), CURVE.point_class("g2")()
    vk = VerifyingKey(CURVE, g1, g2, g2, g2, [g1, g1])
    proof = Proof(CURVE, g1, g2, g1)
    assert not circom.verify(vk, [P], proof)
    assert not circom.verify(vk, [P + 5], proof)
