"""Finding 4: "Replacing a circuit is not atomic. `atomic_dir` deletes the old directory and
then renames the new one in, so a kill in between leaves no circuit. The leftover
`.NAME.XXXX/` directory is then listed as a circuit, and `proofflow circuit list` fails until
it is removed by hand."

Real `proofflow circuit add --replace` processes are SIGKILLed at fault points (between the
renames, mid-write); the registry's next use must show the circuit as it was, list only real
circuits, and leave no killed writer's directory behind."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

import circom_files
from proofflow import cli, settings
from proofflow.prover import circom, files
from proofflow.prover.circom import registry, setup

# out = x*y, z = out + 3 (wires: one, out, x, y, z)
CONSTRAINTS = [({2: 1}, {3: 1}, {1: 1}), ({0: 3, 1: 1}, {0: 1}, {4: 1})]


@pytest.fixture
def tiny(tmp_path, monkeypatch):
    """A home with circuit `tiny` registered from zkey A; zkey B is another key of it."""
    monkeypatch.setenv("PROOFFLOW_HOME", str(tmp_path / "home"))
    r1cs = tmp_path / "tiny.r1cs"
    r1cs.write_bytes(circom_files.r1cs(CONSTRAINTS, 5, 1, 1, 2))
    for seed, name in ((1, "a.zkey"), (2, "b.zkey")):
        setup.write_test_zkey(circom.read_r1cs(r1cs), seed, tmp_path / name)
    registry.add("tiny", r1cs, tmp_path / "a.zkey")
    return r1cs, tmp_path / "a.zkey", tmp_path / "b.zkey"


def _killed_replace(r1cs, zkey, fault: str, marker) -> None:
    env = dict(os.environ, PROOFFLOW_FAULT=f"{fault}:{marker}")
    proc = subprocess.run([sys.executable, "-m", "proofflow.cli", "circuit", "add", "tiny", "--r1cs", str(r1cs),
                           "--zkey", str(zkey), "--replace"], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, f"not killed at {fault}: exit {proc.returncode}\n{proc.stderr[-2000:]}"
    assert marker.exists()


def _listed(capsys) -> list[str]:
    capsys.readouterr()
    assert cli.main(["circuit", "list", "--json"]) == 0, capsys.readouterr().err
    return [row["name"] for row in json.loads(capsys.readouterr().out)]


def _zkey_sha(capsys) -> str:
    capsys.readouterr()
    assert cli.main(["circuit", "show", "tiny"]) == 0
    return json.loads(capsys.readouterr().out)["files"]["zkey"]["sha256"]


def test_a_replace_killed_between_its_renames_keeps_the_old_circuit(tiny, tmp_path, capsys):
    r1cs, zkey_a, zkey_b = tiny
    circuits = settings.current().circuits_dir
    _killed_replace(r1cs, zkey_b, "kill:dir.swap.tiny", tmp_path / "killed")
    with files.atomic_dir(circuits / "other") as live:  # a writer at work meanwhile is left alone
        assert _listed(capsys) == ["tiny"]
        assert _zkey_sha(capsys) == files.sha256_file(zkey_a)
        assert live.is_dir()
        (live / "circuit.json").write_text("{}")
    assert sorted(p.name for p in circuits.iterdir()) == ["other", "tiny"]
    assert registry.add("tiny", r1cs, zkey_b, replace=True)["files"]["zkey"]["sha256"] == files.sha256_file(zkey_b)


def test_a_replace_killed_mid_write_leaves_the_circuit_and_nothing_else(tiny, tmp_path, capsys):
    r1cs, zkey_a, zkey_b = tiny
    _killed_replace(r1cs, zkey_b, "kill_mid_write:a_query.npy", tmp_path / "killed")
    assert _listed(capsys) == ["tiny"]
    assert _zkey_sha(capsys) == files.sha256_file(zkey_a)
    assert [p.name for p in settings.current().circuits_dir.iterdir()] == ["tiny"]


def test_a_leftover_that_looks_like_a_circuit_is_never_listed(tiny, capsys):
    circuits = settings.current().circuits_dir
    leftover = circuits / ".tiny.k3j4h5g6"  # what the old atomic_dir left when killed before its rename
    shutil.copytree(circuits / "tiny", leftover)
    assert _listed(capsys) == ["tiny"]
    assert leftover.is_dir(), "a lockless leftover is kept for a grace period: its writer may be starting"
    old = time.time() - 2 * 3600
    os.utime(leftover, (old, old))
    assert _listed(capsys) == ["tiny"]
    assert [p.name for p in circuits.iterdir()] == ["tiny"]
