"""Failures a user can see (#36): a run's inputs are checked for content by validate before
any work; a run that fails says where and why on the CLI, in --json, in the timing store's
runs row and in the report; and it publishes nothing under the bundles directory, while a
run that succeeds names each partition's input in its manifest."""
import json
import re
import shutil
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

GOOD = {"secret": 7, "salt": 1, "bound": 9}
ASSERTS = {"secret": 2**64, "salt": 1, "bound": 9}  # Num2Bits(64) asserts: only running the circuit shows it


@pytest.fixture
def home(home_at, tmp_path):
    (tmp_path / "root" / "inputs").mkdir(parents=True)
    return home_at(tmp_path / "root")


@pytest.fixture
def gadgets(ceremony, home):
    from proofflow.prover.circom import registry
    g = ceremony["gadgets"]
    registry.add("gadgets", g.r1cs, g.zkey, g.wasm)
    return g


def _input(home, name: str, content) -> str:
    path = home / "root" / "inputs" / name
    path.write_text(json.dumps(content))
    return str(path)


def _published(home) -> list[Path]:
    return [p for p in (home / "bundles").rglob("*") if p.is_file()] if (home / "bundles").exists() else []


def _store(home):
    from proofflow.timing import TimingStore
    return TimingStore(f"sqlite:///{home / 'timing.db'}")


def test_validate_refuses_bad_content_naming_each_input_and_nothing_is_written(gadgets, ceremony, proof_run_dag,
                                                                             home):
    from proofflow.spec import RunFailure
    wrong_size = home / "root" / "inputs" / "other.wtns"  # a witness of another circuit (chain): its size differs
    shutil.copy(ceremony["chain"].witness({"x": 3, "c": 5}, "other"), wrong_size)
    inputs = [_input(home, "good.json", GOOD), _input(home, "bad.json", {**GOOD, "z": 1}), str(wrong_size),
              _input(home, "huge.json", {**GOOD, "salt": str(2**400)})]
    dr = proof_run_dag.test(run_conf={"circuit": "gadgets", "inputs": inputs, "backend": "cpu"})
    assert str(getattr(dr.state, "value", dr.state)) == "failed"
    store = _store(home)
    cause = RunFailure.from_row(store.run("proof_run", dr.run_id))
    assert (cause.task_id, cause.map_index, cause.input) == ("validate", 1, "inputs/bad.json")
    assert "input 1 (inputs/bad.json): 'z' is not an input signal" in cause.message
    assert "input 2 (inputs/other.wtns): a witness of" in cause.message and "signals" in cause.message
    assert "input 3 (inputs/huge.json): input signal 'salt': an integer of 401 bits" in cause.message
    assert str(2**400) not in cause.message, "an input's value is never echoed"
    assert "input 0" not in cause.message
    assert not {t["task_id"] for t in store.timings("proof_run", dr.run_id)} & {"setup", "partition.synthesize"}
    assert _published(home) == []


def test_a_synthesis_failure_is_told_by_the_cli_json_store_and_report(gadgets, proof_run_dag, home, monkeypatch,
                                                                      capfd):
    """One good and one input whose assert fails (validate cannot see it): the run fails in
    partition 1's synthesis, publishes nothing, and every place a user looks says so."""
    from proofflow import cli
    from proofflow.airflow import local
    from proofflow.spec import RunFailure
    from proofflow.timing import summary as summaries
    from proofflow.timing.report import print_report, run_report

    def run_here(conf, log_path=None):  # `proofflow run`'s dag.test, in this test's Airflow home
        dr = proof_run_dag.test(run_conf=conf)
        return local.LocalRun(dr.run_id, str(getattr(dr.state, "value", dr.state)), f"sqlite:///{home / 'timing.db'}")
    monkeypatch.setattr(local, "configure", lambda: home / "airflow")
    monkeypatch.setattr(local, "run_proof_run", run_here)
    given = [home / "good.json", home / "asserts.json"]  # outside the input root: `run` stages them there
    given[0].write_text(json.dumps(GOOD))
    given[1].write_text(json.dumps(ASSERTS))

    assert cli.main(["run", "--circuit", "gadgets", "--backend", "cpu", "--json", "--inputs", *map(str, given)]) == 1
    out, err = capfd.readouterr()
    s = json.loads(out.strip().splitlines()[-1])
    expected = (rf"partition 1 \({given[1]}\) failed in partition\.synthesize: circuit '\w+' rejects the inputs "
                r"\(an assert failed\): Error in template Num2Bits_\d+ line: \d+")
    assert s["error"] and re.match(expected, s["error"]), s["error"]
    assert f"error: {s['error']}\n" in err and f"see {s['log']}" in err
    assert s["wall_s"] is not None and s["state"] == "failed"
    assert _published(home) == [], "a failed run published a proof"

    row = _store(home).run("proof_run", s["run_id"])
    cause = RunFailure.from_row(row)
    assert (cause.task_id, cause.map_index) == ("partition.synthesize", 1)
    assert cause.input.endswith("0001-asserts.json") and "Error in template Num2Bits_" in cause.message
    assert str(given[1]) not in cause.message, "the message names the input once, in its own field"

    # the table: the cause, and no None
    assert cli.main(["summary", s["run_id"]]) == 0
    table = capfd.readouterr().out
    assert "None" not in table and "gadgets 2^" in table
    # the report, the note and the UI's page
    store = _store(home)
    rep = run_report(store, "proof_run", s["run_id"])
    print_report(rep)
    text = capfd.readouterr().out
    fig = summaries.run_figures(store, "proof_run", s["run_id"])
    for shown in (text, summaries.note_markdown(fig), summaries.html_page(fig, "x.png")):
        assert "None" not in shown and "failed in partition.synthesize" in shown and "Num2Bits_" in shown


def test_a_run_refused_at_validate_reports_without_none(gadgets, proof_run_dag, home):
    from proofflow.timing import summary as summaries
    dr = proof_run_dag.test(run_conf={"circuit": "gadgets", "inputs": [_input(home, "x.json", {"x": 1})],
                                      "backend": "cpu"})
    store = _store(home)
    fig = summaries.run_figures(store, "proof_run", dr.run_id)
    page, note = summaries.html_page(fig, "x.png"), summaries.note_markdown(fig)
    for shown in (page, note):
        assert "None" not in shown and "failed in validate" in shown
    s = summaries.summarize(store, "proof_run", dr.run_id)
    assert s["error"].startswith("partition 0 (inputs/x.json) failed in validate: ")


def test_a_run_publishes_its_whole_bundle_naming_each_input(gadgets, proof_run_dag, home):
    inputs = [_input(home, "a.json", GOOD), {"secret": 3, "salt": 2, "bound": 9}]
    dr = proof_run_dag.test(run_conf={"circuit": "gadgets", "inputs": inputs, "backend": "cpu"})
    assert str(getattr(dr.state, "value", dr.state)) == "success"
    (manifest,) = (home / "bundles").rglob("manifest.json")
    assert [p["input"] for p in json.loads(manifest.read_text())["partitions"]] == ["inputs/a.json", "inline"]
    assert (manifest.parent / "run-summary.json").exists() and (manifest.parent / "partition-0001.proof").exists()
