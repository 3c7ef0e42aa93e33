"""``python -m proofflow.prover`` as a user runs it: real processes, exit codes and messages."""
import subprocess
import sys

import pytest

from proofflow.prover.device import available as gpu_available


def run(*args, check_rc=None):
    proc = subprocess.run([sys.executable, "-m", "proofflow.prover", *map(str, args)], capture_output=True, text=True, timeout=600)
    if check_rc is not None:
        assert proc.returncode == check_rc, proc.stdout + proc.stderr
    return proc


@pytest.mark.parametrize("cmd", ["setup", "prove", "verify", "demo"])
def test_help_on_each_subcommand(cmd):
    out = run(cmd, "--help", check_rc=0).stdout
    assert "usage: python -m proofflow.prover " + cmd in out


def test_demo_exits_zero_and_prints_phases():
    out = run("demo", "--log2", "10", "--partitions", "2", "--backend", "cpu", check_rc=0).stdout
    for phase in ("setup", "synthesis", "ntt", "msm", "verify"):
        assert phase in out
    assert "2/2 proofs verify" in out


@pytest.mark.parametrize("args,msg", [
    (["demo", "--log2", "30"], "must be in 8..27"),
    (["demo", "--partitions", "0"], "must be at least 1"),
    (["demo", "--circuit", "nope"], "unknown circuit"),
    (["verify", "/nonexistent/bundle"], "not found"),
    (["prove", "--params", "/nonexistent", "--partitions", "1", "--out", "/tmp/x"], "no readable proving key"),
])
def test_bad_input_is_a_clear_error(args, msg):
    proc = run(*args, check_rc=2)
    assert msg in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.skipif(gpu_available(), reason="this machine has a GPU")
def test_gpu_asked_for_but_absent(tmp_path):
    for cmd in (["demo"], ["setup", "--log2", "8", "--out", tmp_path / "keys"]):
        proc = run(*cmd, "--backend", "gpu", check_rc=2)
        assert "no GPU is visible" in proc.stderr
    assert not (tmp_path / "keys").exists()


def test_setup_on_a_chosen_backend(tmp_path):
    proc = run("setup", "--log2", 8, "--out", tmp_path / "cpu", "--backend", "cpu", check_rc=0)
    assert "backend cpu" in proc.stderr
    run("setup", "--log2", 8, "--out", tmp_path / "auto", "--quiet", check_rc=0)
    for name in ("params.json", "vk.json", "b_g2_query.npy"):
        assert (tmp_path / "cpu" / name).read_bytes() == (tmp_path / "auto" / name).read_bytes()


def test_prove_then_verify_then_refuse_a_corrupted_proof(tmp_path):
    params, proofs = tmp_path / "params", tmp_path / "proofs"
    run("setup", "--log2", 12, "--out", params, "--quiet", check_rc=0)  # the command line, not a size: 2^12
    proc = run("prove", "--params", params, "--partitions", 1, "--out", proofs, "--backend", "cpu", check_rc=0)
    assert "partition 1/1 proved" in proc.stderr
    assert "1/1 proofs verify" in run("verify", proofs, check_rc=0).stdout

    proof = proofs / "partition-0000.proof"
    good = proof.read_bytes()
    proof.write_bytes(good[:100] + bytes([good[100] ^ 0x40]) + good[101:])  # corrupted
    proc = run("verify", proofs, check_rc=1)
    assert "partition 0: INVALID" in proc.stdout

    proof.write_bytes(good[:150])  # truncated
    proc = run("verify", proofs, check_rc=2)
    assert "192 bytes" in proc.stderr


def test_a_setup_that_does_not_fit_is_refused_naming_the_numbers(tmp_path, monkeypatch, capsys):
    """The key's disk (and host memory) are checked before any work: here a disk with 1 GB free."""
    from dataclasses import replace

    from proofflow.prover import cli, resources
    probe = resources.probe
    monkeypatch.setattr(resources, "probe", lambda config, key_dir=None: replace(
        probe(config, key_dir), key=resources.Disk(key_dir, 10**9), cs_cached=True))
    out = tmp_path / "keys"
    assert cli.main(["setup", "--log2", "22", "--out", str(out), "--backend", "cpu"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: log2 22 does not fit this machine: the proving key needs 2.4 GB on disk at {out} "
                          "(1.0 GB free)"), err
    assert "Traceback" not in err and not out.exists()
