"""Finding 7: "`verify` follows manifest paths out of the bundle. `"proof": "../../etc/hostname"`
is read and its size reported; `/dev/zero` ends in a `MemoryError` with exit 1."

`python -m proofflow.prover verify DIR` on a real bundle whose manifest (or vk.json, or
manifest.json itself) points elsewhere: outside through `..`, an absolute path or a symlink,
at /dev/zero, a fifo or a directory. Each is a malformed bundle: exit 2 with a one-line error,
and the path is not read (a fifo with no writer would block its reader; a valid proof outside
the bundle would verify). The CLI runs with its address space capped and a timeout, so the old
code's reads fail the test instead of the machine."""
from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TIMEOUT_S = 20


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("made") / "bundle"
    proc = subprocess.run([sys.executable, "-m", "proofflow.prover", "demo", "--log2", "8", "--partitions", "2",
                           "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    proc = _verify(out)
    assert proc.returncode == 0 and "2/2 proofs verify" in proc.stdout, proc.stderr
    return out


@pytest.fixture
def bundle(made, tmp_path) -> Path:
    """A fresh copy of a valid two-proof bundle, with a valid proof lying outside it."""
    d = tmp_path / "bundle"
    shutil.copytree(made, d)
    shutil.copy(d / "partition-0001.proof", tmp_path / "outside.proof")
    return d


def _limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def _verify(d: Path) -> subprocess.CompletedProcess:
    try:
        return subprocess.run([sys.executable, "-m", "proofflow.prover", "verify", str(d)], capture_output=True,
                              text=True, timeout=TIMEOUT_S, preexec_fn=_limit_memory)
    except subprocess.TimeoutExpired:
        pytest.fail(f"verify did not finish within {TIMEOUT_S} s: it opened a path it must not read")


def _set_proof(d: Path, entry: int, name: str) -> None:
    manifest = json.loads((d / "manifest.json").read_text())
    manifest["partitions"][entry]["proof"] = name
    (d / "manifest.json").write_text(json.dumps(manifest))


def _malformed(d: Path, *words: str) -> str:
    proc = _verify(d)
    assert proc.returncode == 2, f"exit {proc.returncode}: {proc.stdout[-500:]} {proc.stderr[-1500:]}"
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in proc.stderr, proc.stderr
    assert all(w in lines[0] for w in words), lines[0]
    assert "proofs verify" not in proc.stdout
    return lines[0]


@pytest.mark.parametrize("where", ["dotdot", "absolute", "symlink", "symlinked dir"])
def test_a_proof_outside_the_bundle_is_not_read(where, bundle, tmp_path):
    outside = tmp_path / "outside.proof"
    if where == "dotdot":
        _set_proof(bundle, 1, "../outside.proof")
    elif where == "absolute":
        _set_proof(bundle, 1, str(outside))
    elif where == "symlink":
        (bundle / "partition-0001.proof").unlink()
        (bundle / "partition-0001.proof").symlink_to(outside)
    else:
        (bundle / "sub").symlink_to(tmp_path)
        _set_proof(bundle, 1, "sub/outside.proof")
    message = _malformed(bundle, "manifest entry 1 is unusable: its proof")
    assert str(outside) not in message and "outside.proof" not in message


@pytest.mark.parametrize("what", ["/dev/zero", "fifo", "directory"])
def test_a_proof_that_is_not_a_regular_file_is_not_read(what, bundle):
    if what == "/dev/zero":
        _set_proof(bundle, 0, "/dev/zero")
    elif what == "fifo":
        os.mkfifo(bundle / "zero.proof")
        _set_proof(bundle, 0, "zero.proof")
    else:
        (bundle / "proofs").mkdir()
        _set_proof(bundle, 0, "proofs")
    _malformed(bundle, "manifest entry 0 is unusable: its proof")


@pytest.mark.parametrize("name, why", [("vk.json", "not a regular file"), ("manifest.json", "outside the bundle")])
def test_the_bundles_own_files_must_be_regular_files_inside_it(name, why, bundle, tmp_path):
    """vk.json a fifo, or manifest.json a symlink to a valid bundle's manifest elsewhere."""
    if name == "vk.json":
        (bundle / "vk.json").unlink()
        os.mkfifo(bundle / "vk.json")
    else:
        (tmp_path / "manifest.json").write_bytes((bundle / "manifest.json").read_bytes())
        (bundle / "manifest.json").unlink()
        (bundle / "manifest.json").symlink_to(tmp_path / "manifest.json")
    _malformed(bundle, name, why)


@pytest.mark.parametrize("name", ["manifest.json", "vk.json"])
def test_the_bundles_own_json_is_read_within_bounds(name, bundle):
    """A manifest or verifying key nested 100,000 deep: refused by the bounded JSON reader
    (docs/security.md), not a RecursionError."""
    (bundle / name).write_text("[" * 100_000 + "]" * 100_000)
    _malformed(bundle, name, "deep")
