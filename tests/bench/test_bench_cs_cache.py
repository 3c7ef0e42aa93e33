"""bench/cs_cache.py: the constraint-system cache's bytes a constraint in format 1 and 2, the
round trip checked, and the 2^27 projection (flagged where the sizes measured are too small
for the widths 2^27 needs)."""
from __future__ import annotations

import json
import time

from bench import cs_cache
from proofflow.prover import resources


def test_it_measures_both_formats_and_projects_2p27(tmp_path):
    out = tmp_path / "cs.json"
    result = cs_cache.main(["--sizes", "9", "11", "--circuits", "mimc", "bits", "--repeats", "1", "--out", str(out)])
    assert json.loads(out.read_text())["circuits"] == result["circuits"]
    for name in ("mimc", "bits"):
        rows, projected = result["circuits"][name]["sizes"], result["circuits"][name]["projected"]
        for row in rows:
            assert row["round_trip_equal"] and row["rmatvec_equal"]
            assert row["format2_bytes"] == sum(row["format2_files"].values()) < row["format1_bytes"]
            # format 1: 8 + 32 bytes a term (column, coefficient), 8 a row pointer, 128 a header and shape.npy (3 int64)
            header = resources.NPY_HEADER
            assert row["format1_bytes"] == sum(8 * (row["constraints"] + 1) + 40 * nnz + 3 * header
                                               for nnz in row["nnz"]) + header + 24
            assert row["format2_bytes_per_constraint"] < resources.CS_CACHE_DISK
        assert projected["from_log2"] == [9, 11] and projected["constraints"] > 2**26
        assert not projected["widths_hold"]  # 16-bit columns at 2^11: 2^27 needs 32
        assert projected["format2_bytes"] < projected["format1_bytes"]
        assert projected["key_bytes_compressed"] > 38 * 10**9


def test_at_scale_it_builds_through_the_cache_and_keeps_other_rows(tmp_path, monkeypatch):
    monkeypatch.setenv("PROOFFLOW_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "scale.json"
    cs_cache.main(["--scale", "10", "--circuits", "bits", "--repeats", "1", "--out", str(out)])
    result = cs_cache.main(["--scale", "10", "--circuits", "mimc", "--repeats", "1", "--out", str(out)])
    assert set(result["circuits"]) == {"bits", "mimc"} == set(json.loads(out.read_text())["circuits"])
    for name in ("bits", "mimc"):
        row = result["circuits"][name]["at_scale"]
        d = tmp_path / "cache" / "constraint-systems" / f"{name}-2^10-1"
        assert row["format2_bytes"] == sum(p.stat().st_size for p in d.iterdir()) == sum(row["format2_files"].values())
        # at 2^10 the build may reuse freed heap (no peak) and the products' CPU time may round to 0
        assert row["build_peak_anon_bytes"] >= 0 and row["rmatvec_cpu_s"] >= 0 and row["widths"]["c"]["which"] == "uint8"
    assert result["circuits"]["mimc"]["at_scale"]["round_constants_bytes"] > 0


def test_peak_anon_sees_memory_touched_and_freed_inside_the_block():
    import numpy as np
    from bench.setup_sizes import PeakAnon
    with PeakAnon() as mem:
        block = np.ones(64 << 20, dtype=np.uint8)  # touched: resident anonymous pages
        time.sleep(0.1)  # the sampler's period is 5 ms
        del block
    assert mem.bytes >= 60 << 20
