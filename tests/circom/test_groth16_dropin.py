"""`proofflow groth16 prove|fullprove|verify` as a drop-in for snarkjs's (issue #36, item 2):
snarkjs's argument order and output files, run as a user runs them (subprocesses), each
proof accepted by `snarkjs groth16 verify`, public.json as snarkjs writes it, the zkey's
parse kept in the key cache, and bad files refused in one line with exit 2 and nothing
written."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import circom_files

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
INPUTS = {"x": 3, "c": 5}


def _proofflow(home: Path, *args) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "PROOFFLOW_"))}
    env.update(PROOFFLOW_HOME=str(home), PROOFFLOW_SERVICE_IDLE_S="60",  # a GPU's service (auto) goes soon
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")])))
    return subprocess.run([sys.executable, "-m", "proofflow.cli", *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=300)


@pytest.fixture(scope="module")
def chain(ceremony, tmp_path_factory):
    """The chain circuit's files, a witness and input.json for it, snarkjs's own proof, and a fresh home."""
    c = ceremony["chain"]
    d = tmp_path_factory.mktemp("dropin")
    wtns = c.witness(INPUTS, "dropin")
    (d / "input.json").write_text(json.dumps({k: str(v) for k, v in INPUTS.items()}))
    c.toolchain.snarkjs("groth16", "prove", c.zkey, wtns, d / "snarkjs_proof.json", d / "snarkjs_public.json")
    return {"circuit": c, "wtns": wtns, "dir": d, "home": d / "home"}


def _accepted_by_snarkjs(c, public: Path, proof: Path) -> bool:
    proc = c.toolchain.snarkjs("groth16", "verify", c.vk, public, proof, check=False)
    return proc.returncode == 0 and "OK!" in proc.stdout


def _refused(out: subprocess.CompletedProcess, *fragments: str) -> None:
    """Exit 2 with one line on stderr that names what is wrong."""
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), out.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def test_prove_writes_what_snarkjs_writes_and_caches_the_zkey(chain):
    c, d = chain["circuit"], chain["dir"]
    proof, public = d / "proof.json", d / "public.json"
    first = _proofflow(chain["home"], "groth16", "prove", c.zkey, chain["wtns"], proof, public, "--backend", "cpu",
                       "-v")
    assert first.returncode == 0, first.stderr
    assert "parsed into the key cache" in first.stderr and first.stdout == ""
    assert _accepted_by_snarkjs(c, public, proof)
    assert public.read_bytes() == (d / "snarkjs_public.json").read_bytes()
    theirs = json.loads((d / "snarkjs_proof.json").read_text())
    assert list(json.loads(proof.read_text())) == list(theirs)  # the same fields, in snarkjs's order
    cached = [d for d in (chain["home"] / "params" / "zkeys").iterdir() if d.name != "by-stat"]
    assert len(cached) == 1 and (cached[0] / "zkey.json").exists() and (cached[0] / "key" / "params.json").exists()

    # the second call takes the parse from the cache (snarkjs's alias g16p)
    again = _proofflow(chain["home"], "g16p", c.zkey, chain["wtns"], d / "proof2.json", d / "public2.json", "-v")
    assert again.returncode == 0, again.stderr
    assert f"from the key cache {cached[0]}" in again.stderr
    assert _accepted_by_snarkjs(c, d / "public2.json", d / "proof2.json")


def test_fullprove_from_input_json(chain):
    c, d = chain["circuit"], chain["dir"]
    proof, public = d / "full_proof.json", d / "full_public.json"
    out = _proofflow(chain["home"], "groth16", "fullprove", d / "input.json", c.wasm, c.zkey, proof, public)
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""  # quiet like snarkjs unless -v
    assert _accepted_by_snarkjs(c, public, proof)
    assert public.read_bytes() == (d / "snarkjs_public.json").read_bytes()


def test_verify_in_snarkjs_order(chain):
    c, d = chain["circuit"], chain["dir"]
    ok = _proofflow(chain["home"], "groth16", "verify", c.vk, d / "snarkjs_public.json", d / "snarkjs_proof.json")
    assert ok.returncode == 0 and ok.stdout.strip() == "OK!", ok.stderr
    wrong = d / "wrong_public.json"
    wrong.write_text(json.dumps([str(int(v) + 1) for v in json.loads((d / "snarkjs_public.json").read_text())]))
    bad = _proofflow(chain["home"], "g16v", c.vk, wrong, d / "snarkjs_proof.json")
    assert bad.returncode == 1 and "Invalid proof" in bad.stderr and "OK!" not in bad.stdout


def test_refusals_are_one_line_exit_2_and_write_nothing(chain, ceremony, tmp_path):
    c, home = chain["circuit"], chain["home"]
    proof, public = tmp_path / "proof.json", tmp_path / "public.json"
    other = ceremony["gadgets"].witness({"secret": 123456789, "salt": 42, "bound": 10**9}, "dropin_other")
    _refused(_proofflow(home, "groth16", "prove", c.zkey, other, proof, public), "number of signals")

    other_field = tmp_path / "goldilocks.zkey"
    other_field.write_bytes(circom_files.zkey_head(r=circom_files.GOLDILOCKS))
    _refused(_proofflow(home, "groth16", "prove", other_field, chain["wtns"], proof, public), str(other_field),
             "Goldilocks")

    missing = tmp_path / "missing.wtns"
    _refused(_proofflow(home, "groth16", "prove", c.zkey, missing, proof, public), str(missing))
    _refused(_proofflow(home, "groth16", "fullprove", tmp_path / "missing.json", c.wasm, c.zkey, proof, public),
             "missing.json")

    bad_input = tmp_path / "bad.json"
    bad_input.write_text('{"x": "3", "nosuch": "1", "c": "5"}')
    _refused(_proofflow(home, "groth16", "fullprove", bad_input, c.wasm, c.zkey, proof, public), "nosuch")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.json", "goldilocks.zkey"]  # no output, no temporary


def test_a_zkey_rewritten_in_place_is_not_served_from_the_cache(chain, tmp_path):
    """The cache is keyed by the zkey's bytes: the same path with other bytes is read again
    (here refused), not answered from the entry its old bytes made."""
    c, home = chain["circuit"], tmp_path / "home"
    zkey = tmp_path / "c.zkey"
    zkey.write_bytes(c.zkey.read_bytes())
    first = _proofflow(home, "g16p", zkey, chain["wtns"], tmp_path / "p.json", tmp_path / "q.json", "-v")
    assert first.returncode == 0 and "parsed into the key cache" in first.stderr, first.stderr
    zkey.write_bytes(circom_files.zkey_head(r=circom_files.GOLDILOCKS))
    _refused(_proofflow(home, "g16p", zkey, chain["wtns"], tmp_path / "p2.json", tmp_path / "q2.json"), "Goldilocks")
