"""decompress.cu's per-point body on the CPU twin (tests/helpers/kernel_twin.cpp) against the
CPU path's decompression (proofflow/prover/native/compressed.c) and the library's encoding:
the same rows bit for bit, canonical and in the MSMs' Montgomery form, and a refused row with
the same row and reason; for every registered curve (each its own encoding: zcash's for
BLS12-381, arkworks's for BN254). No GPU needed; skipped without a C++ compiler."""
from __future__ import annotations

import re

import numpy as np
import pytest

import kernel_twin as twin
from compressed_rows import bad_rows
from kernel_twin import per_curve
from proofflow.prover.native import compressed

if twin.compiler() is None:
    pytest.skip("no C++ compiler for the kernel twin", allow_module_level=True)

NONE = 2**64 - 1


def _twin(curve, group: str, rows: np.ndarray, mont: bool, first: int = 0) -> tuple[np.ndarray, int]:
    n = len(rows)
    out = np.zeros((n, curve.xy_bytes(group) // 8), dtype=np.uint64)
    bad = np.array([NONE], dtype=np.uint64)
    twin.call(f"twin_decompress_{group}", np.uint64(n), np.ascontiguousarray(rows), out, np.uint64(n),
              np.uint64(first), np.int32(int(mont)), bad, curve=curve)
    return out, int(bad[0])


@per_curve()
@pytest.mark.parametrize("group", ["g1", "g2"])
def test_the_kernel_body_is_the_cpu_decompression(curve, group):
    table = twin.edge_table(group, 96, np.random.default_rng(7), curve)  # infinity, a repeat, a point and its negation
    rows = compressed.compress(curve, group, table.xy)
    canonical, bad = _twin(curve, group, rows, mont=False)
    assert bad == NONE
    assert np.array_equal(canonical.view(np.uint8).reshape(len(rows), -1), compressed.decompress(curve, group, rows))
    assert np.array_equal(canonical.view(np.uint8).reshape(len(rows), -1), table.xy)
    mont, _ = _twin(curve, group, rows, mont=True)
    assert np.array_equal(mont, twin.points(twin.TwinExecutor(curve), table))  # what to_montgomery makes of xy


@per_curve()
@pytest.mark.parametrize("group", ["g1", "g2"])
def test_the_kernel_body_refuses_what_the_cpu_refuses(curve, group):
    good = compressed.compress(curve, group, twin.edge_table(group, 8, np.random.default_rng(8), curve).xy)
    for reason, rows_refused in bad_rows(group, curve).items():
        for bad in rows_refused:
            rows = np.concatenate([good, bad, good, bad])
            _, code = _twin(curve, group, rows, mont=True, first=1000)
            assert code == ((1000 + len(good)) << 8 | reason)  # the least row, in the whole table's numbering
            with pytest.raises(compressed.KeyFormatError, match=rf"row {len(good)} .*{re.escape(compressed.REASONS[reason])}"):
                compressed.decompress(curve, group, rows)
