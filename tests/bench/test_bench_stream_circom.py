"""bench.stream with a registered circom circuit (its streams run on the device: bench/device.sh
circom-prep, then stream-circom): the options, each run's conf cycling through the inputs, the
registration and inputs checked before any deployment starts; with the circom toolchain,
bench.circom_prep registering a small chain with distinct inputs, and snarkjs's verdict on a
sample of real bundles. (A real stream through Airflow takes minutes on this machine: it is
the benchmark, not a test.)"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bench import circom_prep, stream
from circom_toolchain import cpp_toolchain_missing


def _error(capsys, argv) -> str:
    with pytest.raises(SystemExit):
        stream.parse(argv)
    return capsys.readouterr().err


def test_options_of_a_registered_circuit(capsys):
    a = stream.parse(["--circuit", "chain-2p20", "--inputs", "/in", "--partitions", "8", "--in-flight", "4",
                      "--backend", "gpu", "--home", "/h"])
    assert not a.builtin and a.log2 is None and a.partitions == [8] and a.in_flight == [4]
    assert a.out.name == "stream-gpu-chain-2p20.json" and a.inputs == Path("/in") and a.snarkjs_sample == 8
    assert stream.parse(["--circuit", "chain-2p20", "--inputs", "/in", "--label", "h200-chain-2p20"]).out.name \
        == "stream-h200-chain-2p20.json"
    m = stream.parse([])
    assert m.builtin and m.circuit == "mimc" and m.log2 == [10] and m.out.name == "stream-cpu.json"
    assert "--inputs DIR" in _error(capsys, ["--circuit", "chain-2p20"])
    assert "has its own size" in _error(capsys, ["--circuit", "chain-2p20", "--inputs", "/in", "--log2", "20"])
    assert "mimc makes its own" in _error(capsys, ["--inputs", "/in"])
    assert "not a circuit name" in _error(capsys, ["--circuit", "Chain", "--inputs", "/in"])
    assert "one per --log2 size" in _error(capsys, ["--circuit", "c", "--inputs", "/in", "--partitions", "8", "4"])
    assert "--home" in _error(capsys, ["--set", "PROOFFLOW_HOME=/h"])


def test_runs_cycle_through_the_inputs():
    inputs = [f"/in/{i:04d}.json" for i in range(5)]
    base = {"circuit": "c", "backend": "cpu"}
    confs = [stream.run_conf(base, i, [1, 2], inputs, 2) for i in range(4)]
    assert [[Path(x).stem for x in c["inputs"]] for c in confs] == [
        ["0000", "0001"], ["0002", "0003"], ["0004", "0000"], ["0001", "0002"]]
    assert [c["seed"] for c in confs] == [1, 2, 1, 2] and all(c["circuit"] == "c" for c in confs)
    assert base == {"circuit": "c", "backend": "cpu"}  # each run's conf is its own
    assert stream.run_conf({"log2": 10}, 3, [0], None, 8) == {"log2": 10, "seed": 0}  # a built-in circuit's
    # 64 inputs, runs of 8: consecutive runs prove different inputs, and every input as often as the others
    inputs = [f"/in/{i:04d}.json" for i in range(64)]
    runs = [stream.run_conf({}, i, [0], inputs, 8)["inputs"] for i in range(24)]
    assert all(not set(a) & set(b) for a, b in zip(runs, runs[1:])) and all(len(set(r)) == 8 for r in runs)
    used = [x for r in runs for x in r]
    assert {used.count(x) for x in inputs} == {3}


def test_a_sample_spreads_over_the_runs():
    assert stream.spread(list(range(10)), 3) == [1, 5, 8]
    assert stream.spread(list(range(100)), 8) == [6, 18, 31, 43, 56, 68, 81, 93]
    assert stream.spread([1, 2], 8) == [1, 2] and stream.spread([], 8) == []


def _register(home: Path, name: str, log2: int, wasm: bool = True) -> None:
    d = home / "circuits" / name
    d.mkdir(parents=True)
    (d / "circuit.json").write_text(json.dumps({"name": name, "log2": log2, "constraints": 250, "curve": "bls12_381",
                                                "wasm": wasm, "public": 2}))


def _args(*argv: str):
    return stream.parse(["--backend", "cpu", "--partitions", "2", *argv])


def test_a_registration_and_its_inputs_are_checked_before_any_run(tmp_path):
    home = tmp_path / "home"
    _register(home, "chain-2p8", 8)
    inside = home / "inputs" / "chain-2p8"
    inside.mkdir(parents=True)
    for i in range(3):
        (inside / f"{i:04d}.json").write_text(json.dumps({"x": str(i), "c": "1"}))
    (inside / "notes.txt").write_text("not an input")
    (plan,) = stream.streams(_args("--circuit", "chain-2p8", "--inputs", str(inside)), home)
    assert (plan["log2"], plan["constraints"], plan["partitions"]) == (8, 250, 2)
    assert plan["base"] == {"circuit": "chain-2p8", "backend": "cpu", "staging": "pinned", "curve": "bls12_381",
                            "partitions_per_task": 1}
    assert plan["inputs"] == [str(inside / f"{i:04d}.json") for i in range(3)]  # in place, in name order

    outside = tmp_path / "elsewhere"  # linked into the deployment's input root, as `proofflow run --inputs` does
    shutil.copytree(inside, outside)
    (plan,) = stream.streams(_args("--circuit", "chain-2p8", "--inputs", str(outside)), home)
    staged = [Path(x) for x in plan["inputs"]]
    assert [p.name for p in staged] == ["0000-0000.json", "0001-0001.json", "0002-0002.json"]
    assert all(p.parent.parent == home / "inputs" for p in staged)
    assert staged[1].read_text() == (outside / "0001.json").read_text()

    with pytest.raises(ValueError, match=r"'chain-2p9' is not registered in .*home/circuits"):
        stream.streams(_args("--circuit", "chain-2p9", "--inputs", str(inside)), home)
    with pytest.raises(ValueError, match="3 input files .*fewer than the 4 partitions"):
        stream.streams(_args("--circuit", "chain-2p8", "--inputs", str(inside), "--partitions", "4"), home)
    with pytest.raises(ValueError, match="not a directory"):
        stream.streams(_args("--circuit", "chain-2p8", "--inputs", str(tmp_path / "none")), home)
    _register(home, "nowasm", 8, wasm=False)  # input.json files need the circuit's wasm: the run's own refusal
    with pytest.raises(ValueError, match="registered without its .wasm"):
        stream.streams(_args("--circuit", "nowasm", "--inputs", str(inside)), home)
    # --set's PROOFFLOW_INPUT_ROOTS is the deployment's: files there are used in place
    (plan,) = stream.streams(_args("--circuit", "chain-2p8", "--inputs", str(outside),
                                   "--set", f"PROOFFLOW_INPUT_ROOTS={tmp_path}"), home)
    assert plan["inputs"][0] == str(outside / "0000.json")


def test_sample_verdicts():
    assert stream.sample_ok(None) and stream.sample_ok({"skipped": "node is not on the PATH"})
    assert stream.sample_ok({"checked": 8, "verified": 8})
    assert not stream.sample_ok({"checked": 8, "verified": 7}) and not stream.sample_ok({"checked": 0, "verified": 0})
    w = stream.with_sample({"ok": True}, {"checked": 2, "verified": 1})
    assert w["ok"] is False and w["snarkjs_sample"]["verified"] == 1
    assert stream.snarkjs_sample([], 2, 0, Path("/x"))["skipped"] == "--snarkjs-sample 0"
    assert "no snarkjs at /no/snarkjs" in stream.snarkjs_sample([], 2, 4, Path("/no/snarkjs"))["skipped"]


# -- with the circom toolchain ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """bench.circom_prep's chain at 2^8 with 5 inputs, registered in a home of its own."""
    if not shutil.which("node"):
        pytest.skip("node is not installed: circom2 and snarkjs run on node")
    from bench import circom_family as cf
    if not (cf.CIRCOM.exists() and stream.SNARKJS.exists()):
        pytest.skip(f"no circom toolchain ({cf.CIRCOM}, {stream.SNARKJS}): npm ci --prefix tests/circom")
    root = tmp_path_factory.mktemp("circom-prep")
    argv = ["--home", str(root / "home"), "--work", str(root / "work"), "--sizes", "8", "--inputs", "5",
            "--backend", "cpu"]
    assert circom_prep.main(argv) == 0
    return root, argv


@pytest.mark.slow
def test_prep_registers_the_circuit_with_distinct_inputs(prepared):
    root, argv = prepared
    home = root / "home"
    rec = json.loads((root / "work" / "circom-prep.json").read_text())["circuits"]["chain-2p8"]
    assert rec["complete"] and rec["k"] == 253 and rec["log2"] == 8 and rec["public_matches_expected"]
    core = rec["witness_abc_core_s"]  # inputs 1-3 of the 5, warm
    assert core["repeats"] == 3 and 0 < core["min"] <= core["median"]
    info = json.loads((home / "circuits" / "chain-2p8" / "circuit.json").read_text())
    assert (info["log2"], info["constraints"], info["public"], info["wasm"]) == (8, 253, 2, True)
    inputs = sorted((home / "inputs" / "chain-2p8").iterdir())
    assert [p.name for p in inputs] == [f"{i:04d}.json" for i in range(5)]
    assert len({p.read_text() for p in inputs}) == 5
    assert not (root / "work" / "chain-2p8" / "build").exists()  # the registry holds its own copies
    # every step recorded: a second run does none of them again
    steps = root / "work" / "chain-2p8" / "steps"
    stamps = {p.name: p.stat().st_mtime_ns for p in steps.iterdir()}
    assert circom_prep.main(argv) == 0
    assert {p.name: p.stat().st_mtime_ns for p in steps.iterdir()} == stamps


@pytest.mark.slow
def test_prep_over_bn254_compiles_for_bn128_and_names_the_curve(prepared, tmp_path):
    """--curve bn254: circom's bn128 prime, the curve in the circuit's name and registration,
    and the inputs' expected public signals reduced mod BN254's r (input 0's checked by warm)."""
    home = tmp_path / "home"
    argv = ["--home", str(home), "--work", str(tmp_path / "work"), "--sizes", "8", "--inputs", "2",
            "--backend", "cpu", "--curve", "bn254"]
    assert circom_prep.main(argv) == 0
    rec = json.loads((tmp_path / "work" / "circom-prep.json").read_text())["circuits"]["chain-bn254-2p8"]
    assert rec["complete"] and rec["curve"] == "bn254" and rec["public_matches_expected"]
    info = json.loads((home / "circuits" / "chain-bn254-2p8" / "circuit.json").read_text())
    assert info["curve"] == "bn254" and info["log2"] == 8
    assert (tmp_path / "work" / "calibration-chain-bn128.json").exists()  # not the bls12381 calibration


def _bundle(name: str, log2: int, inputs: list[str], d: Path) -> None:
    """A run's bundle as the DAG writes it (every proof checked, snarkjs's files beside)."""
    from proofflow import spec
    from proofflow.prover import pipeline
    from proofflow.prover.backend.by_name import get_backend
    from proofflow.prover.circom import registry
    from proofflow.prover.circuits.by_name import get_circuit
    from proofflow.prover.keys import KeyCache
    from proofflow.prover.staging.pool import staging_pool
    config = spec.validate_params({"circuit": name, "inputs": inputs, "backend": "cpu"}, gpu_available=lambda: False)
    circuit, backend = get_circuit(name, log2), get_backend("cpu")
    key = KeyCache().get(registry.key_dir(name), name, log2)
    publics = {}
    for p, x in enumerate(inputs):
        with pipeline.synthesize(circuit, 0, p, staging_pool(pinned=False), input=x) as staged:
            proof = pipeline.prove(key, staged, backend)
        pipeline.publish(proof, key.pk.vk, staged.public_inputs, d, p, snarkjs=True)
        publics[p] = staged.public_inputs
    assert pipeline.complete_bundle(d, config, key.pk.vk, publics) == len(inputs)


@pytest.mark.slow
def test_snarkjs_checks_a_sample_spread_over_the_bundles(prepared, tmp_path, monkeypatch):
    root, _ = prepared
    home = root / "home"
    for var, value in (("PROOFFLOW_HOME", home), ("PROOFFLOW_CIRCUITS", home / "circuits"),
                       ("PROOFFLOW_INPUT_ROOTS", home / "inputs")):
        monkeypatch.setenv(var, str(value))
    inputs = sorted(str(p) for p in (home / "inputs" / "chain-2p8").iterdir())
    runs = []
    for i in range(2):  # two runs of 2 partitions, and one that left no bundle
        _bundle("chain-2p8", 8, stream.run_conf({}, i, [0], inputs, 2)["inputs"], tmp_path / f"b{i}")
        runs.append({"run_id": f"r{i}", "bundle_dir": str(tmp_path / f"b{i}")})
    runs.append({"run_id": "failed", "bundle_dir": None})
    sample = stream.snarkjs_sample(runs, 2, 3, stream.SNARKJS)
    assert (sample["checked"], sample["verified"], sample["of_proofs"], sample["rejected"]) == (3, 3, 4, [])
    assert sample["version"].startswith("snarkjs@")
    # a public signal changed in a sampled proof's public.json: snarkjs rejects that one
    public = tmp_path / "b1" / "partition-0000.public.json"  # run 1's first proof: the sample's second
    values = json.loads(public.read_text())
    public.write_text(json.dumps([values[0], str(int(values[1]) + 1)]))
    sample = stream.snarkjs_sample(runs, 2, 3, stream.SNARKJS)
    assert (sample["checked"], sample["verified"]) == (3, 2) and not stream.sample_ok(sample)
    assert [(r["run_id"], r["partition"]) for r in sample["rejected"]] == [("r1", 0)]


@pytest.mark.slow
def test_prep_with_the_cpp_witness_registers_circoms_generator(prepared, tmp_path):
    """--witness cpp: circom --c's generator built and registered beside the wasm, under a name of
    its own, and the witness plus a/b/c timed with the generator's process counted."""
    if missing := cpp_toolchain_missing():
        pytest.skip(f"circom's C++ witness generators cannot be built: {missing}")
    home = tmp_path / "home"
    argv = ["--home", str(home), "--work", str(tmp_path / "work"), "--sizes", "8", "--inputs", "3",
            "--backend", "cpu", "--witness", "cpp"]
    assert circom_prep.main(argv) == 0
    rec = json.loads((tmp_path / "work" / "circom-prep.json").read_text())["circuits"]["chain-2p8-cpp"]
    assert rec["complete"] and rec["public_matches_expected"] and rec["witness_abc_core_s"]["repeats"] == 2
    info = json.loads((home / "circuits" / "chain-2p8-cpp" / "circuit.json").read_text())
    assert info["witness_generator"] is True and info["wasm"] is True and info["log2"] == 8
