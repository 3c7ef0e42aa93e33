"""bench.scaling's own logic (its runs are the benchmark): the device list, the headline
figures from two runs' results, and a clear stop where the GPUs asked for are not there."""
import argparse

import pytest

from bench import scaling


def _result(window_s, steady, verified=32, per_device=None):
    return {"window_s": window_s, "steady_partitions": steady, "proofs_verified": verified, "partitions": 32,
            "per_device": per_device or {}}


@pytest.mark.parametrize("spec", ["0", "0,0", "a,b", "-1,0", ""])
def test_devices_need_two_distinct_indices(spec):
    with pytest.raises(argparse.ArgumentTypeError):
        scaling.parse_devices(spec)


def test_devices_parse():
    assert scaling.parse_devices("0,1") == [0, 1] and scaling.parse_devices(" 2, 3,") == [2, 3]


def test_summary_figures():
    one = _result(31.0, 31)  # 1 partition a second
    two = _result(15.0, 28, per_device={"cuda:0": {"busy_fraction": 0.97, "kernel_busy_fraction": 0.95, "partitions": 14},
                                        "cuda:1": {"busy_fraction": 0.93, "kernel_busy_fraction": 0.9, "partitions": 14}})
    s = scaling.summarize(one, two, [0, 1])
    assert s["proofs_per_minute"] == {"1": pytest.approx(60.0), "2": pytest.approx(112.0)}
    assert s["scaling"] == pytest.approx(112.0 / 60.0) and s["meets_goal"] is False  # 1.87 < 1.9
    assert s["per_gpu_busy"] == {"cuda:0": 0.97, "cuda:1": 0.93}
    assert s["per_gpu_partitions"] == {"cuda:0": 14, "cuda:1": 14}
    assert s["all_verified"] is True
    fast = scaling.summarize(one, _result(15.0, 30), [0, 1])
    assert fast["meets_goal"] is True  # 120 / 60 = 2.0


def test_summary_without_a_steady_window_or_with_a_failed_proof():
    s = scaling.summarize(_result(None, 0), _result(15.0, 30, verified=31), [0, 1])
    assert s["scaling"] is None and s["meets_goal"] is False and s["all_verified"] is False


def test_gpu_backend_without_gpus_stops_before_airflow(monkeypatch):
    import builtins
    real_import = builtins.__import__

    def no_cupy(name, *a, **k):
        if name == "cupy":
            raise ImportError("No module named 'cupy'")
        return real_import(name, *a, **k)
    monkeypatch.setattr(builtins, "__import__", no_cupy)
    with pytest.raises(SystemExit, match="no GPU here"):
        scaling.check_devices("gpu", [0, 1])
    scaling.check_devices("cpu", [0, 1])  # simulated devices: nothing to check


def test_too_few_partitions_for_a_steady_state(capsys):
    with pytest.raises(SystemExit):
        scaling.main(["--devices", "0,1", "--partitions", "3"])
    assert "too few to leave a steady state" in capsys.readouterr().err
