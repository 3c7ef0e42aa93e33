"""bench.partition on the CPU backend at a small size (the benchmark itself runs at 2^27 on
the H200: bench/device.sh 2p27): the JSON's phases, the steady state without the warm-up,
every proof verified, the witness's classes, the target's verdict, and clear stops."""
import json

import pytest

from bench import partition
from proofflow.prover.keys import ensure_key

LOG2 = 8


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    root = tmp_path_factory.mktemp("keys")
    for circuit in ("mimc", "bits"):
        ensure_key(root / circuit, circuit, LOG2, 0, backend="cpu")
    return root


def _run(keys, tmp_path, circuit, *extra, key=None):
    out = tmp_path / f"{circuit}.json"
    rc = partition.main(["--circuit", circuit, "--log2", str(LOG2), "--key", str(key or keys / circuit),
                         "--backend", "cpu", "--warmup", "1", "--repeats", "2", "--out", str(out), *extra])
    return rc, (json.loads(out.read_text()) if out.exists() else None)


@pytest.mark.parametrize("circuit", ["mimc", "bits"])
def test_a_cpu_run_records_each_phase_and_verifies_every_proof(keys, tmp_path, circuit, monkeypatch):
    # one CPU thread: the MSMs one after another, each timed apart (on several threads the
    # backend computes them at once, in one call, and the run has no per-MSM spans)
    monkeypatch.setenv("PROOFFLOW_CPU_THREADS", "1")
    rc, r = _run(keys, tmp_path, circuit)
    assert rc == 0 and r["all_verified"] and r["checked"]
    assert (r["circuit"], r["log2"], r["backend"]) == (circuit, LOG2, "cpu")
    assert r["environment"]["cores"] >= 1 and r["sizes"]["n"] == 1 << LOG2
    assert set(r["once_s"]) == {"warm_up", "key_load", "key_upload", "staging_wait", "synthesis"}
    assert [p["warmup"] for p in r["proofs"]] == [True, False, False] and all(p["verified"] for p in r["proofs"])
    for p in r["proofs"]:
        s = p["seconds"]
        assert {"h2d", "ntt", "msm", "assemble", "verify"} <= set(s)
        assert {f"msm_{m}" for m in ("a", "b1", "b2", "l", "h")} <= set(s)
        assert s["device"] == pytest.approx(s["ntt"] + s["msm"], abs=2e-6)
        assert sum(s[f"msm_{m}"] for m in ("a", "b1", "b2", "l", "h")) <= s["msm"] + 1e-5
        assert p["transfers"]["h2d"]["bytes"] == r["sizes"]["abc_bytes"]
        assert p["transfers"]["h2d_witness"]["bytes"] == r["sizes"]["witness_bytes"]
    measured = [p["seconds"]["device"] for p in r["proofs"][1:]]  # the warm-up left out
    assert r["steady"]["device"] == {"min": min(measured), "median": pytest.approx(sum(measured) / 2)}
    assert r["target"] == {"device_phase_s": partition.TARGETS_S[circuit], "log2": 27,
                           "median_device_s": round(r["steady"]["device"]["median"], 4), "met": None}
    assert r["device_memory"] is None and r["estimate"]["device_bytes"] is None
    assert set(r["host_available_bytes"]) == {"start", "after_key_upload", "after_synthesis", "after_proofs"}
    w = r["witness"]["a_b1_b2"]
    assert w["zeros"] + w["ones"] + w["others"] == w["scalars"] == r["sizes"]["variables"]
    # bits: a witness of bits, which the GPU splits; mimc: dense, Pippenger's whole
    assert w["split_on_gpu"] is (circuit == "bits") and r["witness"]["l"]["split_on_gpu"] is (circuit == "bits")


def test_a_proof_that_does_not_verify_fails_the_run(keys, tmp_path, monkeypatch):
    from proofflow.prover.groth16 import verifier
    monkeypatch.setattr(verifier, "verify", lambda *a: False)
    rc, r = _run(keys, tmp_path, "bits")
    assert rc == 1 and r["all_verified"] is False and not any(p["verified"] for p in r["proofs"])


def test_the_target_applies_at_2p27():
    assert partition.verdict("bits", 27, 1.9)["met"] is True and partition.verdict("bits", 27, 2.1)["met"] is False
    assert partition.verdict("mimc", 27, 6.9)["met"] is True and partition.verdict("mimc", 27, 7.2)["met"] is False
    assert partition.verdict("mimc", 26, 1.0)["met"] is None


def test_a_missing_or_mismatched_key_or_no_gpu_stops_with_a_message(keys, tmp_path, capsys, monkeypatch):
    rc, r = _run(keys, tmp_path, "bits", key=tmp_path / "nowhere")
    assert rc == 2 and r is None and "no proving key at" in capsys.readouterr().err
    rc, _ = _run(keys, tmp_path, "bits", key=keys / "mimc")
    assert rc == 2 and "is for mimc 2^8, the job is bits 2^8" in capsys.readouterr().err
    from proofflow.prover import device
    monkeypatch.setattr(device, "available", lambda: False)
    out = tmp_path / "gpu.json"
    assert partition.main(["--circuit", "bits", "--log2", str(LOG2), "--key", str(keys / "bits"), "--backend", "gpu",
                           "--out", str(out)]) == 2
    assert "backend 'gpu' asked for, but no GPU is visible here" in capsys.readouterr().err and not out.exists()


def test_a_run_that_does_not_fit_is_refused_before_any_work(keys, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PROOFFLOW_STAGING_BUDGET", "4096")  # less than a partition's a/b/c
    rc, r = _run(keys, tmp_path, "mimc")
    assert rc == 2 and r is None
    assert "does not fit this machine: a partition's a/b/c and witness need" in capsys.readouterr().err


def test_a_bn254_run_proves_over_its_key_and_refuses_another_curves(keys, tmp_path, capsys):
    """--curve bn254: the key's curve, the partition's and the proofs' (128 bytes, verified);
    a BLS12-381 key refused; the issue's BN254 bounds apply at 2^22 and 2^24."""
    ensure_key(tmp_path / "bn254", "mimc", LOG2, 0, backend="cpu", curve="bn254")
    rc, r = _run(keys, tmp_path, "mimc", "--curve", "bn254", key=tmp_path / "bn254")
    assert rc == 0 and r["all_verified"] and (r["curve"], r["log2"]) == ("bn254", LOG2)
    assert r["target"] is None  # no BN254 bound at 2^8
    rc, _ = _run(keys, tmp_path, "mimc", "--curve", "bn254")  # the BLS12-381 key
    assert rc == 2 and "is over bls12_381, the run asks for bn254" in capsys.readouterr().err
    assert partition.verdict("mimc", 22, 0.14, "bn254") == {"device_phase_s": 0.15, "log2": 22,
                                                             "median_device_s": 0.14, "met": True}
    assert partition.verdict("mimc", 24, 0.51, "bn254")["met"] is False
    assert partition.verdict("bits", 27, 1.0, "bn254") is None
