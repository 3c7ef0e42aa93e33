"""bench.witness: the chain's witness by the wasm generator (first calls and warm) and by
circom's C++ generator, compiled from the blocked chain, each way's witness equal and timed in
wall and core seconds."""
from __future__ import annotations

import json
import shutil

import pytest

from bench import witness as bench_witness
from circom_toolchain import cpp_toolchain_missing

pytestmark = pytest.mark.slow


def test_every_way_gives_the_same_witness_and_its_core_seconds(tmp_path):
    if not (bench_witness.CIRCOM / "node_modules" / ".bin" / "circom2").exists() or shutil.which("node") is None:
        pytest.skip("no circom toolchain: npm ci --prefix tests/circom")
    if missing := cpp_toolchain_missing():
        pytest.skip(f"circom's C++ witness generators cannot be built: {missing}")
    out = tmp_path / "witness.json"
    bench_witness.main(["--sizes", "10", "--repeats", "2", "--out", str(out)])
    row = json.loads(out.read_text())["sizes"]["10"]
    assert row["constraints"] == 1 << 10 and row["same_witness"] is True  # the blocks' links are substituted away
    for way in ("wasm_first_call_compiled", "wasm_first_call_from_disk", "wasm_warm", "cpp"):
        assert row[way]["repeats"] == 2 and 0 < row[way]["min_s"] <= row[way]["median_s"]
        assert row[way]["cpu_median_s"] > 0
    assert row["ratios"]["wasm_warm_over_cpp"] > 0
