"""A user's circom circuit through proofflow: registered with `proofflow circuit add`, proved
by a proof_run (dag.test) from its inputs, every proof accepted by `snarkjs groth16 verify`."""
import json
import shutil
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


@pytest.fixture
def home(home_at, tmp_path):
    """The test's directory as the home's parts; input files anywhere in it (the input root)."""
    return home_at(tmp_path)


def _witness(circuit, inputs: dict, label: str, home) -> Path:
    """A .wtns by snarkjs, copied into the input root."""
    return Path(shutil.copy(circuit.witness(inputs, label), home / f"{label}.wtns"))


def _cli(*args):
    from proofflow import cli
    return cli.main([str(a) for a in args])


def test_register_then_prove_a_run_that_snarkjs_verifies(ceremony, proof_run_dag, home, capsys):
    from proofflow import spec
    from proofflow.prover.circom import read_public
    from proofflow.timing import TimingStore
    chain = ceremony["chain"]
    assert _cli("circuit", "add", "chain", "--r1cs", chain.r1cs, "--zkey", chain.zkey, "--wasm", chain.wasm) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["name"] == "chain" and info["public"] == 2 and info["wasm"] and spec.registered_circuits() == ["chain"]
    # its verifying key is the one snarkjs exports from the zkey
    assert json.loads((home / "circuits" / "chain" / "verification_key.json").read_text())["IC"] == \
        json.loads(chain.vk.read_text())["IC"]

    # the three forms of an input: an input object, an input.json file, a ready .wtns
    input_json = home / "p1.json"
    input_json.write_text(json.dumps({"x": "4", "c": "11"}))
    inputs = [{"x": 3, "c": "11"}, str(input_json), str(_witness(chain, {"x": 5, "c": 11}, "run2", home))]
    dr = proof_run_dag.test(run_conf={"circuit": "chain", "inputs": inputs, "backend": "cpu"})
    assert str(getattr(dr.state, "value", dr.state)) == "success"
    run = TimingStore(f"sqlite:///{home / 'timing.db'}").run("proof_run", dr.run_id)
    assert (run["circuit"], run["partitions"], run["proofs_verified"]) == ("chain", 3, 3)
    bundle = home / "bundles"
    (vk,) = bundle.rglob("verification_key.json")
    for p in range(3):
        proof, public = vk.parent / f"partition-{p:04d}.proof.json", vk.parent / f"partition-{p:04d}.public.json"
        out = chain.toolchain.snarkjs("groth16", "verify", vk, public, proof)
        assert "OK" in out.stdout
        assert read_public(public)[1] == 3 + p  # outputs first (y), then the public input x
    assert _cli("--home", home, "circuit", "list") == 0 and "chain" in capsys.readouterr().out
    # proofflow's own verifier takes the bundle, and snarkjs's three files
    from proofflow.prover import cli as prover_cli
    assert prover_cli.main(["verify", str(vk.parent)]) == 0
    files = ["--vk", str(vk), "--public", str(vk.parent / "partition-0001.public.json"),
             "--proof", str(vk.parent / "partition-0001.proof.json")]
    assert prover_cli.main(["verify", *files]) == 0
    public = json.loads((vk.parent / "partition-0001.public.json").read_text())
    tampered = home / "tampered.json"
    tampered.write_text(json.dumps([public[0], str(int(public[1]) + 1)]))
    assert prover_cli.main(["verify", *files[:2], "--public", str(tampered), *files[4:]]) == 1


def test_a_bad_registration_is_refused_and_leaves_nothing(ceremony, home, capsys):
    chain, gadgets = ceremony["chain"], ceremony["gadgets"]
    assert _cli("circuit", "add", "chain", "--r1cs", chain.r1cs, "--zkey", gadgets.zkey) == 2
    assert "nVars differs" in capsys.readouterr().err
    assert _cli("circuit", "add", "mimc", "--r1cs", chain.r1cs, "--zkey", chain.zkey) == 2
    assert "built-in" in capsys.readouterr().err
    assert _cli("circuit", "add", "Bad Name", "--r1cs", chain.r1cs, "--zkey", chain.zkey) == 2
    assert _cli("circuit", "add", "chain", "--r1cs", chain.r1cs, "--zkey", chain.zkey, "--wasm", chain.r1cs) == 2
    assert "not WebAssembly" in capsys.readouterr().err
    assert not (home / "circuits").exists() or not list((home / "circuits").iterdir())
    assert _cli("circuit", "add", "chain", "--r1cs", chain.r1cs, "--zkey", chain.zkey) == 0
    assert _cli("circuit", "add", "chain", "--r1cs", chain.r1cs, "--zkey", chain.zkey) == 2
    assert "registered already" in capsys.readouterr().err


def test_bad_inputs_are_named_before_any_work(ceremony, home, tmp_path):
    from proofflow.prover.circom import registry
    from proofflow.spec import InvalidParams, validate_params
    chain = ceremony["chain"]
    registry.add("chain", chain.r1cs, chain.zkey)  # no wasm: .wtns inputs only
    ok = _witness(chain, {"x": 5, "c": 1}, "ok", home)

    def check(conf, msg):
        with pytest.raises(InvalidParams, match=msg):
            validate_params({"circuit": "chain", **conf}, gpu_available=lambda: False)

    check({}, "needs inputs")
    check({"inputs": ["relative.wtns"]}, "must be an absolute path")
    check({"inputs": [str(tmp_path / "missing.wtns")]}, "must be an absolute path of an existing")
    check({"inputs": [{"x": "1", "c": "2"}]}, "registered without its .wasm")
    check({"inputs": str(tmp_path / "nowhere")}, "directory of input files")
    check({"circuit": "nosuch", "inputs": [str(ok)]}, "unknown circuit 'nosuch'")
    with pytest.raises(InvalidParams, match="inputs are for registered circom circuits"):
        validate_params({"inputs": [str(ok)]}, gpu_available=lambda: False)
    d = tmp_path / "inputs"
    d.mkdir()
    for name in ("b.wtns", "a.wtns"):
        (d / name).write_bytes(ok.read_bytes())
    (d / "notes.txt").write_text("not an input")
    cfg = validate_params({"circuit": "chain", "inputs": str(d), "log2": 8, "partitions": 64},
                          gpu_available=lambda: False)
    assert cfg.circom and cfg.log2 == registry.get("chain")["log2"]
    assert cfg.inputs == (str(d / "a.wtns"), str(d / "b.wtns")) and cfg.partitions == 2


def test_an_input_violating_a_constraint_fails_synthesis_naming_it(ceremony, home, tmp_path):
    from proofflow.prover import pipeline
    from proofflow.prover.staging.shared import SharedStaging
    from proofflow.prover.circom import registry
    from proofflow.prover.circuits.by_name import get_circuit
    chain = ceremony["chain"]
    registry.add("chain", chain.r1cs, chain.zkey)
    good = _witness(chain, {"x": 5, "c": 1}, "good", home)
    raw = bytearray(good.read_bytes())
    raw[-32] ^= 1  # the last signal, changed
    bad = tmp_path / "bad.wtns"
    bad.write_bytes(bytes(raw))
    circuit = get_circuit("chain", registry.get("chain")["log2"])
    staging = SharedStaging.from_settings()
    with pytest.raises(pipeline.InputError, match=f"input {bad}: the witness does not satisfy the circuit"):
        pipeline.synthesize_shared(circuit, 0, 0, staging, "d/r/p0000", input=str(bad))
    assert staging.leases() == [], "a refused input left its segment leased"
    out = pipeline.synthesize_shared(circuit, 0, 1, staging, "d/r/p0001", input=str(good))
    assert out["public_inputs"][1] == hex(5)


def test_pending_work_names_a_circuit_and_inputs_beside_it(ceremony, home, tmp_path):
    from proofflow.airflow.pending import claim
    from proofflow.prover.circom import registry
    chain = ceremony["chain"]
    registry.add("chain", chain.r1cs, chain.zkey)
    pending = tmp_path / "pending"
    (pending / "inputs").mkdir(parents=True)
    (pending / "inputs" / "p0.wtns").write_bytes(chain.witness({"x": 2, "c": 3}, "pending").read_bytes())
    (pending / "job.json").write_text(json.dumps({"circuit": "chain", "inputs": ["inputs/p0.wtns"]}))
    (pending / "bad.json").write_text(json.dumps({"circuit": "chain", "inputs": ["inputs/missing.wtns"]}))
    assert claim(pending) == [{"circuit": "chain", "inputs": [str(pending / "inputs" / "p0.wtns")]}]
    assert "must be an absolute path of an existing" in (pending / "rejected" / "bad.json.error").read_text()


def test_setup_writes_a_test_only_zkey_the_registry_takes(ceremony, home, tmp_path, capsys):
    from proofflow.prover.circom import read_zkey
    chain = ceremony["chain"]
    out = tmp_path / "chain.zkey"
    assert _cli("setup", "--r1cs", chain.r1cs, "--out", out, "--seed", 3, "--backend", "cpu") == 0
    assert "TEST ONLY" in capsys.readouterr().err and b"TEST ONLY" in out.read_bytes()
    assert read_zkey(out).n_vars == read_zkey(chain.zkey).n_vars
    assert _cli("circuit", "add", "chain", "--r1cs", chain.r1cs, "--zkey", out) == 0
    assert _cli("setup", "--r1cs", chain.r1cs) == 2 and "both --r1cs and --out" in capsys.readouterr().err
    assert _cli("setup", "--r1cs", chain.r1cs, "--out", tmp_path / "x.bin") == 2
    assert _cli("setup", "--r1cs", tmp_path / "missing.r1cs", "--out", tmp_path / "y.zkey") == 2
    assert not (tmp_path / "y.zkey").exists()


def test_an_input_the_circuit_refuses_fails_its_partition_naming_the_file(ceremony, home, tmp_path):
    from proofflow.prover import pipeline
    from proofflow.prover.staging.shared import SharedStaging
    from proofflow.prover.circom import registry
    from proofflow.prover.circuits.by_name import get_circuit
    gadgets = ceremony["gadgets"]
    registry.add("gadgets", gadgets.r1cs, gadgets.zkey, gadgets.wasm)
    bad = tmp_path / "bad-input.json"
    bad.write_text(json.dumps({"nosuchsignal": "1"}))
    circuit = get_circuit("gadgets", registry.get("gadgets")["log2"])
    staging = SharedStaging.from_settings()
    with pytest.raises(pipeline.InputError, match=f"input {bad}.*nosuchsignal"):
        pipeline.synthesize_shared(circuit, 0, 0, staging, "d/r/p0000", input=str(bad))
    assert staging.leases() == [] and not staging.root.exists(), "a refused input touched the staging"
