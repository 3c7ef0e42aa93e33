"""Key-side density (proofflow/prover/device/density.py): which rows a table keeps, and MSMs
over the kept rows with their gathered scalars on the CPU twin of the kernels (Pippenger
plain and with precomputed copies, the witness split) against the point library over the whole
table; a real MiMC key's B tables keep exactly the variables its B matrix uses. The MSMs and
the key for every registered curve (BN254: small cases). No GPU needed; skipped without a
C++ compiler."""
from __future__ import annotations

import numpy as np
import pytest

from proofflow.prover import points
from proofflow.prover.circuits.by_name import get_circuit
from proofflow.prover.device import density, pippenger, sparse
from proofflow.prover.field.fr import Fr
from proofflow.prover.groth16 import generator
import kernel_twin as twin
from kernel_twin import CURVE, per_curve

fr = Fr.of(CURVE)

if twin.compiler() is None:
    pytest.skip("no C++ compiler for the kernel twin", allow_module_level=True)

EX = twin.TwinExecutor()


def _with_infinity(group: str, n: int, every: int, seed: int, curve=CURVE) -> points.PointTable:
    """An edge table (a repeated point, a point and its negation) with every ``every``-th
    row the point at infinity, as a key's B table of a MiMC chain has every third."""
    t = twin.edge_table(group, n, np.random.default_rng(seed), curve)
    xy = t.xy.copy()
    xy[every - 1::every] = 0
    return points.PointTable(curve, group, xy)


def _kept(t: points.PointTable):
    """The twin's device table over the kept rows, and the rows (None: all)."""
    pts = twin.points(twin.TwinExecutor(t.curve), t)
    rows = density.kept_rows(np, pts)
    return (pts if rows is None else pts[rows]), rows


def test_a_table_keeps_its_finite_rows_once_enough_are_infinity():
    t = _with_infinity("g1", 300, 3, 1)
    rows = density.kept_rows(np, twin.points(EX, t))
    want = [i for i in range(300) if i % 3 != 2 and i != 1]  # row 1 of an edge table is infinity too
    assert rows.dtype == np.int64 and rows.tolist() == want
    whole = twin.edge_table("g1", 300, np.random.default_rng(2))  # one row in 300 at infinity
    assert density.kept_rows(np, twin.points(EX, whole)) is None
    # dropped only where the rows left out save more than the indices take: 8 / (8 + 96) of G1
    for group, zeros, kept in (("g1", 7, False), ("g1", 8, True), ("g2", 3, False), ("g2", 4, True)):
        pts = np.ones((100, CURVE.xy_bytes(group) // 8), dtype=np.uint64)
        pts[:zeros] = 0
        assert (density.kept_rows(np, pts) is not None) == kept, (group, zeros)
    assert density.kept_rows(np, np.zeros((0, 12), dtype=np.uint64)) is None
    assert density.kept_rows(np, np.zeros((5, 12), dtype=np.uint64)).shape == (0,)
    s = fr.random(300, np.random.default_rng(3))
    assert np.array_equal(density.gather(np, s, rows), s[want]) and density.gather(np, s, None) is s


@pytest.mark.parametrize("group", ["g1", "g2"])
@per_curve("plan", [None, pippenger.Plan(5, 4)], small=[pippenger.Plan(5, 4)])
def test_msms_over_the_kept_rows_equal_the_library_over_the_whole_table(curve, group, plan):
    """Dense scalars with the window edges, under the plain plan and over copies built from
    the kept rows; a witness of bits through the split (its ones, zeros and a compacted rest)."""
    n = 400 if curve is CURVE else 120
    ex, fr = twin.TwinExecutor(curve), Fr.of(curve)
    t = _with_infinity(group, n, 3, 4, curve)
    pts, rows = _kept(t)
    assert rows is not None and pts.shape[0] == len(rows) < n
    rng = np.random.default_rng(5)
    dense = fr.from_ints((twin.msm_edge_scalars(curve) + fr.to_ints(fr.random(n, rng)))[:n])
    if plan is not None:
        pts = pippenger.precompute(ex, group, pts, plan)
    got = pippenger.msm(ex, group, pts, density.gather(np, dense, rows), plan or pippenger.plain(len(rows)),
                        balanced=True)
    assert got == points.msm(t, dense)
    bits = [int(rng.integers(0, 2)) for _ in range(n)]
    bits[::41] = fr.to_ints(fr.random(len(bits[::41]), rng))
    s = fr.from_ints(bits)
    assert sparse.msm(ex, ex, group, pts, density.gather(np, s, rows), plan=plan, balanced=True) == points.msm(t, s)


@per_curve()
def test_a_mimc_key_keeps_the_variables_b_uses(curve):
    """The chain's t4 variables are in no B row: B_G1 and B_G2 keep the other two thirds, A,
    H and L everything; the key's MSMs over the kept rows are the library's over the tables."""
    circuit = get_circuit("mimc", 8, curve.name)
    pk = generator.setup(circuit, 3)
    used_in_b = np.unique(circuit.constraint_system.b.indices)
    witness = circuit.instance(3, 0).witness
    for name in ("a_query", "b_g1_query", "b_g2_query", "h_query", "l_query"):
        t = getattr(pk, name)
        pts, rows = _kept(t)
        if name.startswith("b_"):
            assert rows.tolist() == used_in_b.tolist() and len(rows) < 0.7 * len(t)
            assert not set(rows.tolist()) & {5 + 3 * i for i in range(circuit.rounds)}  # no t4_i
        else:
            assert rows is None, name
        if name in ("b_g1_query", "b_g2_query"):
            got = pippenger.msm(twin.TwinExecutor(curve), t.group, pts, density.gather(np, witness, rows),
                                balanced=True)
            assert got == points.msm(t, witness)
