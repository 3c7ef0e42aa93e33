"""The proofflow CLI's arguments and output (#36): --home after any command or action
(`proofflow circuit show NAME --home H`), and a closed pipe (`proofflow report ... | head -1`)
ends the command quietly, with the status a SIGPIPE-ended command has, instead of a traceback."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROOFFLOW_")}
    return {**env, "PYTHONPATH": str(ROOT), **extra}


def _home_with_circuit(home: Path) -> None:
    (home / "circuits" / "demo").mkdir(parents=True)
    (home / "circuits" / "demo" / "circuit.json").write_text(json.dumps({"name": "demo", "log2": 3}))


@pytest.mark.parametrize("argv", [["circuit", "show", "demo", "--home", "H"], ["circuit", "--home", "H", "show", "demo"],
                                  ["--home", "H", "circuit", "show", "demo"]])
def test_home_is_taken_after_any_command(tmp_path, argv):
    home = tmp_path / "home"
    _home_with_circuit(home)
    argv = [str(home) if a == "H" else a for a in argv]
    proc = subprocess.run([sys.executable, "-m", "proofflow.cli", *argv], capture_output=True, text=True,
                          env=_env(), timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["name"] == "demo"


def test_a_closed_pipe_is_quiet(tmp_path):
    home = tmp_path / "home"
    _home_with_circuit(home)
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the command writes: every write to stdout fails
    try:
        proc = subprocess.run([sys.executable, "-m", "proofflow.cli", "--home", str(home), "circuit", "show", "demo"],
                              stdout=write, stderr=subprocess.PIPE, text=True, env=_env(), timeout=60)
    finally:
        os.close(write)
    assert proc.stderr == ""
    assert proc.returncode == 128 + 13
