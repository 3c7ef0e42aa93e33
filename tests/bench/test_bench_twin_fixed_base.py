"""bench/twin_fixed_base.py: the fixed-base kernel's batched inversion against one a point,
on the CPU twin; both must give the same points."""
from __future__ import annotations

import json

import pytest

from tests.helpers import kernel_twin as twin

if twin.compiler() is None:
    pytest.skip("no C++ compiler for the kernel twin", allow_module_level=True)

from bench import twin_fixed_base  # noqa: E402


def test_it_writes_both_rates_and_restores_the_batch(tmp_path):
    out = tmp_path / "fb.json"
    result = twin_fixed_base.main(["--points", "96", "--repeats", "1", "--out", str(out)])
    assert json.loads(out.read_text())["groups"] == result["groups"]
    for group, n in (("g1", 96), ("g2", 24)):
        row = result["groups"][group]
        assert row["points"] == n and set(row["points_per_s"]) == {"one_a_point", "one_a_batch"}
        assert row["speedup"] > 0
    assert twin_fixed_base.fixed_base.BATCH == twin_fixed_base.BATCHES[1]
