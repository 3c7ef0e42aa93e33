"""The constraint-system cache's format 2 (proofflow/prover/constraint_files.py): the MiMC and
bits chains and circom r1cs files round-trip to their uncompressed matrices (every row
pointer, column and coefficient, and the products), the distinct coefficients found alike
through a hash collision, a format-1 cache rebuilt saying so, damaged or hostile files refused
naming the file and why (at load, or at the first product for an index out of bounds), and
proofs from the cached system verify."""
from __future__ import annotations

import json
import logging
import os

import numpy as np
import pytest

import circom_files
from proofflow.prover import constraint_files, resources
from proofflow.prover.backend.by_name import get_backend
from proofflow.prover.circom.r1cs import read_r1cs
from proofflow.prover.circuits.by_name import get_circuit
from proofflow.prover.constraint_files import UnreadableCache
from proofflow.prover.curves.bls12_381 import BLS12_381 as CURVE
from proofflow.prover.field.fr import Fr
from proofflow.prover.groth16 import generator, prover, verifier
from proofflow.prover.r1cs import ConstraintSystem, CorruptMatrix, SparseMatrix

fr = Fr.of(CURVE)


def uncompressed(m: SparseMatrix) -> SparseMatrix:
    """The matrix as format 1 kept it: int64 row pointers and columns, a coefficient a term."""
    return SparseMatrix(m.curve, m.rows, m.cols, m.indptr.astype(np.int64), m.indices.astype(np.int64),
                        np.ascontiguousarray(m.coeffs))


def assert_round_trips(cs: ConstraintSystem, d) -> ConstraintSystem:
    """``cs`` saved and loaded back equals its uncompressed matrices, term by term and in its products."""
    constraint_files.save(cs, d)
    back = constraint_files.load(d, cs.curve)
    assert (back.num_public, back.num_variables, back.num_constraints) == (cs.num_public, cs.num_variables,
                                                                           cs.num_constraints)
    rng = np.random.default_rng(cs.num_constraints)
    w, x = fr.random(cs.num_variables, rng), fr.random(cs.num_constraints, rng)
    for name in "abc":
        got, want = getattr(back, name), uncompressed(getattr(cs, name))
        assert isinstance(got.indices, np.memmap) or got.nnz == 0  # used as stored, not decoded
        assert np.array_equal(got.indptr.astype(np.int64), want.indptr)
        assert np.array_equal(got.indices.astype(np.int64), want.indices)
        assert np.array_equal(got.coeffs, want.coeffs)
        assert np.array_equal(got.matvec(w), want.matvec(w)) and np.array_equal(got.rmatvec(x), want.rmatvec(x))
    return back


@pytest.mark.parametrize("family", ["mimc", "bits"])
def test_the_families_round_trip_in_fewer_bytes(family, tmp_path):
    circuit = get_circuit(family, 12)
    back = assert_round_trips(circuit._build(), tmp_path / "cs")
    manifest = json.loads((tmp_path / "cs" / "format.json").read_text())
    assert manifest["coefficients"] == "indexed" and manifest["matrices"]["c"]["which"] == "uint8"
    size = sum(p.stat().st_size for p in (tmp_path / "cs").iterdir())
    assert size < resources.CS_CACHE_DISK * circuit.domain_size < 224 * circuit.num_constraints // 2
    assert back.a.values is back.b.values is back.c.values  # one table of the distinct coefficients


def test_circom_r1cs_files_round_trip(tmp_path):
    """A chain (two distinct coefficients: indexed), random coefficients (mostly distinct: kept
    a term), and the field's edge values and empty combinations."""
    p = fr.MODULUS
    files = {"chain": circom_files.chain_r1cs(300),
             "random": circom_files.random_r1cs(400, 60, np.random.default_rng(3), max_terms=4),
             "edges": circom_files.r1cs([({0: p - 1, 4: 1}, {}, {4: 0}), ({}, {}, {}), ({3: 2**253, 1: 5}, {2: 1},
                                                                                       {0: p - 2})], 5, 1, 1, 1)}
    modes = {}
    for name, data in files.items():
        path = tmp_path / f"{name}.r1cs"
        path.write_bytes(data)
        assert_round_trips(read_r1cs(path, CURVE).cs, tmp_path / name)
        modes[name] = json.loads((tmp_path / name / "format.json").read_text())["coefficients"]
    assert modes == {"chain": "indexed", "random": "per-term", "edges": "indexed"}


def test_a_hash_collision_finds_the_same_distinct_values(monkeypatch):
    values = fr.from_ints([5, 1, 5, 7, 1, 1, 9, 5, 1])
    table, which = constraint_files.intern(values)
    assert fr.to_ints(table) == [1, 5, 7, 9]  # the commonest first, ties in order of first use
    assert np.array_equal(table[which], values) and which.dtype == np.uint8
    monkeypatch.setattr(constraint_files, "_keys", lambda v: np.zeros(v.shape[0], dtype=np.uint64))
    again, which_again = constraint_files.intern(values)
    assert np.array_equal(again, table) and np.array_equal(which_again, which)


def _format1(cs: ConstraintSystem, d) -> None:
    """The cache as ConstraintSystem.save wrote it before format 2."""
    d.mkdir(parents=True)
    for name in "abc":
        m = uncompressed(getattr(cs, name))
        for part, a in (("indptr", m.indptr), ("indices", m.indices), ("coeffs", m.values)):
            np.save(d / f"{name}.{part}.npy", a)
    np.save(d / "shape.npy", np.array([cs.num_public, cs.num_variables, cs.num_constraints]))


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PROOFFLOW_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_a_format_1_cache_is_rebuilt_saying_so(cache, caplog):
    circuit = get_circuit("mimc", 10)
    d = circuit.constraint_system_dir
    _format1(circuit._build(), d)
    assert constraint_files.version(d) == 1
    with pytest.raises(UnreadableCache, match=r"a constraint system in format 1 \(each coefficient in full"):
        constraint_files.load(d, CURVE)
    with caplog.at_level(logging.WARNING):
        cs = get_circuit("mimc", 10).constraint_system
    assert f"{d}: a constraint system in format 1" in caplog.text and "rebuilding it" in caplog.text
    assert constraint_files.version(d) == 2 and not (d / "shape.npy").exists()
    assert np.array_equal(cs.b.coeffs, circuit._build().b.coeffs)


def _saved(tmp_path) -> tuple:
    d = tmp_path / "cs"
    constraint_files.save(get_circuit("mimc", 8)._build(), d)
    return d, json.loads((d / "format.json").read_text())


def _manifest(d, meta):
    (d / "format.json").write_text(json.dumps(meta))


def _rewrite(d, name, array):
    os.unlink(d / name)
    np.save(d / name, array, allow_pickle=True)


HOSTILE_FILES = {
    "not JSON": (lambda d, m: (d / "format.json").write_text("{"), r"format\.json: not JSON"),
    "another format": (lambda d, m: _manifest(d, {**m, "format": "npz"}), "not a proofflow-constraint-system manifest"),
    "a later version": (lambda d, m: _manifest(d, {**m, "version": 3}), "format version 3, this proofflow reads 2"),
    "another curve": (lambda d, m: _manifest(d, {**m, "curve": "bn254"}), "over 'bn254', not bls12_381"),
    "a count not a number": (lambda d, m: _manifest(d, {**m, "num_constraints": True}),
                             "num_constraints is True, not a whole number"),
    "a width not an index type": (lambda d, m: _manifest(d, {**m, "matrices": {**m["matrices"], "b": {
        **m["matrices"]["b"], "indices": "float64"}}}), "matrix b's indices in 'float64', not one of uint8"),
    "an outsized manifest": (lambda d, m: (d / "format.json").write_text(json.dumps(m) + " " * (64 << 10)),
                             "more than 65536"),
    "a linked manifest": (lambda d, m: ((d / "format.json").rename(d / "elsewhere.json"),
                                        (d / "format.json").symlink_to(d / "elsewhere.json")), "format.json"),
    "a truncated array": (lambda d, m: os.truncate(d / "b.indices.npy", 200), r"b\.indices\.npy: "),
    "a missing array": (lambda d, m: os.unlink(d / "c.which.npy"), r"c\.which\.npy: .*No such file"),
    "a pickled array": (lambda d, m: _rewrite(d, "a.indices.npy", np.array([object()] * 3)),
                        r"a\.indices\.npy: .*Python objects"),
    "an array wider than its manifest says": (
        lambda d, m: _rewrite(d, "a.which.npy", np.load(d / "a.which.npy").astype(np.int64)),
        r"a\.which\.npy: int64 \(\d+,\), the manifest says uint8 \(\d+,\)"),
    "an array longer than its manifest says": (
        lambda d, m: _rewrite(d, "a.indices.npy", np.zeros(m["matrices"]["a"]["nnz"] + 1, np.uint8)),
        r"a\.indices\.npy: uint8 \(\d+,\), the manifest says uint8"),
    "row pointers past the terms": (
        lambda d, m: _rewrite(d, "c.indptr.npy", np.load(d / "c.indptr.npy") * 2),
        r"c\.indptr\.npy: row pointers from 0 to \d+, not 0 to the matrix's \d+ terms"),
    "a values FIFO": (lambda d, m: (os.unlink(d / "values.npy"), os.mkfifo(d / "values.npy")),
                      r"values\.npy: not a regular file"),
}


@pytest.mark.parametrize("case", HOSTILE_FILES)
def test_damaged_or_hostile_files_are_refused_naming_the_file(case, tmp_path):
    d, meta = _saved(tmp_path)
    damage, message = HOSTILE_FILES[case]
    damage(d, meta)
    with pytest.raises(UnreadableCache, match=message) as err:
        constraint_files.load(d, CURVE)
    assert str(d) in str(err.value) and "\n" not in str(err.value)


HOSTILE_CONTENT = {  # (matrix, array, entry, value), the array rewritten as int64 (its manifest too)
    "a column past the matrix": ("B", "indices", 5, 256),  # the system of 2^8 has 256 variables
    "a negative column": ("B", "indices", 7, -1),
    "a value index past the table": ("A", "which", 0, None),  # the table's length
    "row pointers out of order": ("C", "indptr", 4, 0),  # row 3 ends before it starts
    "row pointers past the terms": ("C", "indptr", 4, 10**6),
}


@pytest.mark.parametrize("case", HOSTILE_CONTENT)
def test_indices_out_of_bounds_are_refused_by_the_products(case, tmp_path):
    """They load (checking every index at load would read a 2^27 system's 8 GB at each key's
    load); the products check each index as they read it, and name the first bad row."""
    d, meta = _saved(tmp_path)
    matrix, part, at, value = HOSTILE_CONTENT[case]
    name = matrix.lower()
    indptr = getattr(constraint_files.load(d, CURVE), name).indptr
    row = at - 1 if part == "indptr" else int(np.searchsorted(indptr, at, side="right")) - 1
    array = np.load(d / f"{name}.{part}.npy").astype(np.int64)
    array[at] = meta["values"] if value is None else value
    _rewrite(d, f"{name}.{part}.npy", array)
    meta["matrices"][name][part] = "int64"
    _manifest(d, meta)
    cs = constraint_files.load(d, CURVE)
    m = getattr(cs, name)
    for product in (lambda: m.matvec(fr.zeros(cs.num_variables)), lambda: m.rmatvec(fr.zeros(cs.num_constraints))):
        with pytest.raises(CorruptMatrix, match=f"^matrix {matrix} of the constraint system at {d}: row {row} names "
                                                "a term outside the matrix"):
            product()


def test_a_coefficient_not_below_the_modulus_is_refused(tmp_path):
    d, meta = _saved(tmp_path)
    values = np.load(d / "values.npy")
    values[1] = fr._limbs_of(fr.MODULUS)[0]
    _rewrite(d, "values.npy", values)
    cs = constraint_files.load(d, CURVE)
    with pytest.raises(CorruptMatrix, match="coefficient value 1 is not below the field's modulus"):
        cs.a.rmatvec(fr.zeros(cs.num_constraints))


def test_a_damaged_cache_is_rebuilt_and_proofs_from_it_verify(cache, caplog):
    circuit = get_circuit("bits", 9)
    circuit.constraint_system  # noqa: B018 - built and cached
    d = circuit.constraint_system_dir
    os.truncate(d / "a.indices.npy", 100)
    c = get_circuit("bits", 9)
    with caplog.at_level(logging.WARNING):
        cs = c.constraint_system
    assert "a.indices.npy" in caplog.text and "rebuilding it" in caplog.text
    pk = generator.setup(c, seed=2)
    inst = c.instance(5, 0)
    proof = prover.prove(pk, cs, inst.witness, get_backend("cpu"), np.random.default_rng(0),
                         abc=c.witness_map(inst.witness))
    assert verifier.verify(pk.vk, inst.public_inputs, proof)
    assert not verifier.verify(pk.vk, [inst.public_inputs[0], inst.public_inputs[1] ^ 1], proof)


def test_matrices_of_other_arrays_are_refused():
    ok = SparseMatrix(CURVE, 1, 2, np.array([0, 1], np.uint8), np.array([1], np.uint8), fr.ones(1))
    assert ok.nnz == 1
    with pytest.raises(ValueError, match="indices must be a contiguous vector of uint8/uint16/uint32/int64"):
        SparseMatrix(CURVE, 1, 2, ok.indptr, np.array([1.0]), fr.ones(1))
    with pytest.raises(ValueError, match="2 row pointers for 3 rows"):
        SparseMatrix(CURVE, 3, 2, ok.indptr, ok.indices, fr.ones(1))
    with pytest.raises(ValueError, match="1 column indices but 2 coefficients"):
        SparseMatrix(CURVE, 1, 2, ok.indptr, ok.indices, fr.ones(2))
