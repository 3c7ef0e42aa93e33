"""decompress.cu's per-point body on the CPU twin (tests/helpers/kernel_twin.cpp) against the
CPU path's decompression (proofflow/prover/native/compressed.c) and the library's encoding:
the same rows bit for bit, canonical and in the MSMs' Montgomery form, and a refused row with
the same row and reason. No GPU needed; skipped without a C++ compiler."""
from __future__ import annotations

import re

import numpy as np
import pytest

import kernel_twin as twin
from compressed_rows import bad_rows
from proofflow.prover.curves.bls12_381 import BLS12_381 as CURVE
from proofflow.prover.native import compressed

if twin.compiler() is None:
    pytest.skip("no C++ compiler for the kernel twin", allow_module_level=True)

NONE = 2**64 - 1


def _twin(group: str, rows: np.ndarray, mont: bool, first: int = 0) -> tuple[np.ndarray, int]:
    n = len(rows)
    out = np.zeros((n, CURVE.xy_bytes(group) // 8), dtype=np.uint64)
    bad = np.array([NONE], dtype=np.uint64)
    twin.call(f"twin_decompress_{group}", np.uint64(n), np.ascontiguousarray(rows), out, np.uint64(n),
              np.uint64(first), np.int32(int(mont)), bad)
    return out, int(bad[0])


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_the_kernel_body_is_the_cpu_decompression(group):
    table = twin.edge_table(group, 96, np.random.default_rng(7))  # infinity, a repeat, a point and its negation
    rows = compressed.compress(CURVE, group, table.xy)
    canonical, bad = _twin(group, rows, mont=False)
    assert bad == NONE
    assert np.array_equal(canonical.view(np.uint8).reshape(len(rows), -1), compressed.decompress(CURVE, group, rows))
    assert np.array_equal(canonical.view(np.uint8).reshape(len(rows), -1), table.xy)
    mont, _ = _twin(group, rows, mont=True)
    assert np.array_equal(mont, twin.points(twin.TwinExecutor(), table))  # what to_montgomery makes of xy


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_the_kernel_body_refuses_what_the_cpu_refuses(group):
    good = compressed.compress(CURVE, group, twin.edge_table(group, 8, np.random.default_rng(8)).xy)
    for reason, rows_refused in bad_rows(group).items():
        for bad in rows_refused:
            rows = np.concatenate([good, bad, good, bad])
            _, code = _twin(group, rows, mont=True, first=1000)
            assert code == ((1000 + len(good)) << 8 | reason)  # the least row, in the whole table's numbering
            with pytest.raises(compressed.KeyFormatError, match=rf"row {len(good)} .*{re.escape(compressed.REASONS[reason])}"):
                compressed.decompress(CURVE, group, rows)
