"""The r1cs reader's bulk parse (its linear combinations found by r1cs_walk.c, the terms
gathered with numpy): every matrix as an independent term-by-term reading gives it, on
circom-compiled files (checked against snarkjs's own reading too) and on random ones with
empty, long and repeated-wire combinations; the same errors as before for wires out of
range, truncated or overlong sections; a header whose field width is not the field's is
refused; and compiled files round-trip through the constraint-system cache."""
from __future__ import annotations

import json
import struct

import numpy as np
import pytest

import circom_files
from proofflow.prover import circom, constraint_files
from proofflow.prover.curves.bls12_381 import BLS12_381 as CURVE
from proofflow.prover.field.fr import Fr

fr = Fr.of(CURVE)


def reference_terms(path) -> tuple[int, list[list[tuple[int, int, int]]]]:
    """(nWires, per matrix the (row, wire, coefficient) of every term, by row then wire),
    read one field at a time with struct."""
    data = path.read_bytes()
    _, _, count = struct.unpack_from("<4sII", data)
    pos, sections = 12, {}
    for _ in range(count):
        sid, size = struct.unpack_from("<IQ", data, pos)
        sections[sid] = data[pos + 12:pos + 12 + size]
        pos += 12 + size
    head = sections[1]
    n8 = struct.unpack_from("<I", head)[0]
    n_wires = struct.unpack_from("<I", head, 4 + n8)[0]
    n_constraints = struct.unpack_from("<I", head, 4 + n8 + 24)[0]
    body, pos, out = sections[2], 0, [[], [], []]
    for row in range(n_constraints):
        for m in range(3):
            (n,) = struct.unpack_from("<I", body, pos)
            pos += 4
            for _ in range(n):
                (wire,) = struct.unpack_from("<I", body, pos)
                out[m].append((row, wire, int.from_bytes(body[pos + 4:pos + 4 + n8], "little")))
                pos += 4 + n8
    assert pos == len(body)
    return n_wires, [sorted(terms, key=lambda t: (t[0], t[1])) for terms in out]


def matrix_terms(matrix) -> list[tuple[int, int, int]]:
    return list(zip(matrix.row_ids().tolist(), matrix.indices.tolist(), fr.to_ints(matrix.coeffs)))


def assert_reads_as_the_reference(path):
    r = circom.read_r1cs(path)
    n_wires, want = reference_terms(path)
    assert r.n_wires == r.cs.num_variables == n_wires
    for matrix, terms in zip((r.cs.a, r.cs.b, r.cs.c), want):
        assert (matrix.rows, matrix.cols) == (r.n_constraints, n_wires)
        assert matrix_terms(matrix) == terms
    return r


@pytest.mark.parametrize("seed,constraints,max_terms", [(1, 1, 0), (2, 7, 1), (3, 500, 3), (4, 200, 40),
                                                        (5, 3000, 2)])
def test_random_files_read_as_the_reference(seed, constraints, max_terms, tmp_path):
    """Empty combinations (max_terms 0: all of them), long ones, repeated wires (kept, in
    file order within a wire, summed by the product)."""
    path = tmp_path / "r.r1cs"
    path.write_bytes(circom_files.random_r1cs(constraints, 50, np.random.default_rng(seed), max_terms))
    r = assert_reads_as_the_reference(path)
    assert r.n_constraints == constraints


def test_a_file_of_no_constraints(tmp_path):
    path = tmp_path / "none.r1cs"
    path.write_bytes(circom_files.r1cs([], 4, 1, 1, 1))
    r = assert_reads_as_the_reference(path)
    assert r.cs.a.nnz == r.cs.b.nnz == r.cs.c.nnz == 0


def test_edge_coefficients_and_the_last_wire(tmp_path):
    p = fr.MODULUS
    constraints = [({0: p - 1, 4: 1}, {}, {4: 0}), ({}, {}, {}), ({3: 2**253, 1: 5}, {2: 1}, {0: p - 2})]
    path = tmp_path / "e.r1cs"
    path.write_bytes(circom_files.r1cs(constraints, 5, 1, 1, 1))
    assert_reads_as_the_reference(path)


def test_circom_compiled_files_read_as_the_reference_and_as_snarkjs(compiled, tmp_path):
    for name in ("gadgets", "arrays"):
        c = compiled[name]
        r = assert_reads_as_the_reference(c.r1cs)
        out = tmp_path / f"{name}.json"
        c.toolchain.snarkjs("r1cs", "export", "json", c.r1cs, out)
        theirs = json.loads(out.read_text())
        assert len(theirs["constraints"]) == r.n_constraints
        for m, matrix in enumerate((r.cs.a, r.cs.b, r.cs.c)):
            want = sorted((row, int(w), int(v)) for row, con in enumerate(theirs["constraints"])
                          for w, v in con[m].items())
            assert sorted(matrix_terms(matrix)) == want


def test_circom_compiled_files_round_trip_through_the_constraint_system_cache(compiled, tmp_path):
    """gadgets (Poseidon's many constants) and arrays, saved in the cache's format and mapped
    back: every term and both products as read from the r1cs."""
    for name in ("gadgets", "arrays"):
        cs = circom.read_r1cs(compiled[name].r1cs).cs
        constraint_files.save(cs, tmp_path / name)
        back = constraint_files.load(tmp_path / name, CURVE)
        rng = np.random.default_rng(1)
        w, x = fr.random(cs.num_variables, rng), fr.random(cs.num_constraints, rng)
        for got, want in zip((back.a, back.b, back.c), (cs.a, cs.b, cs.c)):
            assert matrix_terms(got) == matrix_terms(want)
            assert np.array_equal(got.matvec(w), want.matvec(w)) and np.array_equal(got.rmatvec(x), want.rmatvec(x))


@pytest.mark.parametrize("wire", [5, 6, 2**31, 2**32 - 1])
def test_a_wire_beyond_the_header_is_refused_naming_its_constraint(wire, tmp_path):
    constraints = [({1: 1}, {2: 1}, {3: 1})] * 3 + [({2: 1}, {0: 1}, {4: 1, wire: 1})] + [({wire: 1}, {}, {})]
    path = tmp_path / "w.r1cs"
    path.write_bytes(circom_files.r1cs(constraints, 5, 1, 1, 1))
    with pytest.raises(circom.CorruptFile, match=f"section 2: constraint 3 uses wire {wire}, beyond the header's "
                                                 "5 wires"):
        circom.read_r1cs(path)


def _with_body(constraints_body: bytes, n_constraints: int) -> bytes:
    header = circom_files.field(fr.MODULUS) + struct.pack("<IIIIQI", 5, 1, 1, 1, 5, n_constraints)
    labels = b"".join(struct.pack("<Q", i) for i in range(5))
    return circom_files.container(b"r1cs", 1, [(2, constraints_body), (1, header), (3, labels)])


def test_truncated_and_overlong_sections_are_refused(tmp_path):
    good = b"".join(circom_files.lc(a) + circom_files.lc(b) + circom_files.lc(c)
                    for a, b, c in [({1: 1, 2: 3}, {0: 1}, {4: 1}), ({}, {3: 1}, {})])
    path = tmp_path / "t.r1cs"
    huge = struct.pack("<I", 0xFFFFFFFF)
    for body, message in [(good[:-1], "truncated: the 2 constraints need more than its 203 bytes"),
                          (good[:-40], "truncated: the 2 constraints need more than its 164 bytes"),
                          (good + huge * 3, "12 unexpected bytes after its content"),
                          (good[:-4] + huge, "truncated: the 2 constraints need more than its 204 bytes")]:
        path.write_bytes(_with_body(body, 2))
        with pytest.raises(circom.CorruptFile, match=f"section 2: {message}"):
            circom.read_r1cs(path)
    path.write_bytes(_with_body(good, 2))
    assert_reads_as_the_reference(path)


def test_a_field_width_other_than_the_field_s_is_refused(tmp_path):
    path = tmp_path / "n48.r1cs"
    path.write_bytes(circom_files.random_r1cs(20, 10, np.random.default_rng(48), n8=48))
    with pytest.raises(circom.CorruptFile, match="section 1: field elements of 48 bytes, but BLS12-381's scalar "
                                                 "field takes 32"):
        circom.read_r1cs(path)
