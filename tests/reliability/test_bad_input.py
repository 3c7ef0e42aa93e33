"""Bad input at every entry point, table by table: the command lines (``python -m proofflow.prover``,
``proofflow``), proof_run's params (validated directly and through dag.test), key and proof
files (truncated, corrupted, of another key, size or circuit), the scratch files prove_gpu
and finalize_partition read (a witness that does not satisfy the circuit among them), the
prover service's jobs (malformed JSON, wrong fields, wrong sizes) and timing rows of wrong
types. Each gets an error naming what is wrong; none writes a proof, a partial artifact or a
row. (REST-triggered runs: tests/test_reliability_scheduler.py.) The count of inputs tried
is printed in the terminal summary."""
from __future__ import annotations

import json
import os
import shutil
import socket
import time
from pathlib import Path

import numpy as np
import pytest

import reliability_figures as figures
from service_inputs import LOG2, job, make_key, partition, raw_prove, verifies

pytestmark = pytest.mark.reliability


def tried(entry: str) -> None:
    figures.add("bad inputs tried")
    figures.add(f"bad inputs tried: {entry}")


def _listing(d: Path) -> dict:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()} if d.exists() else {}


# --- keys and bundles the cases corrupt ---------------------------------------------------------
@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A 2^8 key, another key of the same size (another seed), and a 2-partition bundle."""
    from proofflow.prover import cli
    root = tmp_path_factory.mktemp("bad-input")
    key, other = make_key(root / "key", seed=5), make_key(root / "other-key", seed=6)
    assert cli.main(["prove", "--params", str(key), "--partitions", "2", "--out", str(root / "bundle"),
                     "--backend", "cpu", "--staging", "pageable"]) == 0
    return {"key": key, "other": other, "bundle": root / "bundle"}


def _json_edit(path: Path, fn) -> None:
    doc = json.loads(path.read_text())
    fn(doc)
    path.write_text(json.dumps(doc))


def _flip(path: Path, at: float = 0.5) -> None:
    data = bytearray(path.read_bytes())
    data[int(len(data) * at)] ^= 0xFF
    path.write_bytes(bytes(data))


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


KEY_CASES = {  # mutation of a copy of the key -> what the error names
    "params.json missing": (lambda d, f: (d / "params.json").unlink(), "holds no readable proving key"),
    "params.json not JSON": (lambda d, f: (d / "params.json").write_text("{nope"), "holds no readable proving key"),
    "params.json not an object": (lambda d, f: (d / "params.json").write_text("[1, 2]"), "is not a proofflow"),
    "params.json of another format": (lambda d, f: _json_edit(d / "params.json", lambda j: j.update(format="x/1")),
                                      "is not a proofflow"),
    "params.json without tables": (lambda d, f: _json_edit(d / "params.json", lambda j: j.pop("tables")),
                                   "params.json is malformed"),
    "table truncated": (lambda d, f: _truncate(d / "h_query.npy"), "h_query.npy is missing or does not match"),
    "table corrupted": (lambda d, f: _flip(d / "a_query.npy"), "a_query.npy is missing or does not match"),
    "table missing": (lambda d, f: (d / "l_query.npy").unlink(), "l_query.npy is missing"),
    "table of another key": (lambda d, f: shutil.copy(f["other"] / "b_g1_query.npy", d / "b_g1_query.npy"),
                             "b_g1_query.npy is missing or does not match"),
    "vk.json corrupted": (lambda d, f: (d / "vk.json").write_text("{}"), "-bls12-381/1 verifying key"),
    "key of another size": (lambda d, f: _json_edit(d / "params.json", lambda j: j.update(log2=9)),
                            "the proving key does not match this constraint system"),
    "key of another circuit": (lambda d, f: _json_edit(d / "params.json", lambda j: j.update(circuit="sha256")),
                               "unknown circuit 'sha256'"),
}


@pytest.mark.parametrize("case", list(KEY_CASES))
def test_prover_cli_prove_refuses_a_bad_key(case, files, tmp_path, capsys):
    from proofflow.prover import cli
    key = tmp_path / "key"
    shutil.copytree(files["key"], key)
    mutate, msg = KEY_CASES[case]
    mutate(key, files)
    out = tmp_path / "bundle"
    assert cli.main(["prove", "--params", str(key), "--partitions", "1", "--out", str(out), "--backend", "cpu",
                     "--staging", "pageable"]) == cli.EXIT_BAD_INPUT
    assert msg in capsys.readouterr().err
    assert not list(out.glob("*.proof")) and not (out / "manifest.json").exists(), "a proof was written"
    tried("python -m proofflow.prover (keys)")


ARG_CASES = {  # argv (KEY, OUT, FILE stand for paths) -> exit code, message on stderr
    "prove --partitions 0": (["prove", "--params", "KEY", "--partitions", "0", "--out", "OUT"], 2,
                             "must be at least 1"),
    "prove --partitions x": (["prove", "--params", "KEY", "--partitions", "x", "--out", "OUT"], 2, "not an integer"),
    "prove --backend tpu": (["prove", "--params", "KEY", "--partitions", "1", "--out", "OUT", "--backend", "tpu"], 2,
                            "invalid choice: 'tpu'"),
    "prove --seed -1": (["prove", "--params", "KEY", "--partitions", "1", "--out", "OUT", "--seed", "-1"], 2,
                        "must be at least 0"),
    "prove --params nowhere": (["prove", "--params", "OUT/none", "--partitions", "1", "--out", "OUT"], 2,
                               "holds no readable proving key"),
    "prove --out is a file": (["prove", "--params", "KEY", "--partitions", "1", "--out", "FILE", "--backend", "cpu",
                               "--staging", "pageable"], 2, "File exists"),
    "setup --log2 7": (["setup", "--log2", "7", "--out", "OUT"], 2, "must be in 8..27, got 7"),
    "setup --log2 28": (["setup", "--log2", "28", "--out", "OUT"], 2, "must be in 8..27, got 28"),
    "setup --log2 ten": (["setup", "--log2", "ten", "--out", "OUT"], 2, "not an integer: 'ten'"),
    "setup --circuit sha256": (["setup", "--circuit", "sha256", "--log2", "8", "--out", "OUT"], 2,
                               "unknown circuit 'sha256'"),
    "setup --seed x": (["setup", "--log2", "8", "--out", "OUT", "--seed", "x"], 2, "not an integer"),
    "setup --out is a file": (["setup", "--log2", "8", "--out", "FILE", "--quiet"], 2, "File exists"),
    "demo --partitions 0": (["demo", "--partitions", "0"], 2, "must be at least 1"),
    "demo --log2 99": (["demo", "--log2", "99"], 2, "must be in 8..27"),
    "no command": ([], 2, "required: COMMAND"),
}


@pytest.mark.parametrize("case", list(ARG_CASES))
def test_prover_cli_refuses_bad_arguments(case, files, tmp_path, capsys):
    from proofflow.prover import cli
    argv, code, msg = ARG_CASES[case]
    out, file = tmp_path / "out", tmp_path / "a-file"
    file.write_text("not a directory")
    argv = [a.replace("KEY", str(files["key"])).replace("OUT", str(out)).replace("FILE", str(file)) for a in argv]
    try:
        got = cli.main(argv)
    except SystemExit as exc:  # argparse's own errors
        got = exc.code
    assert got == code
    assert msg in capsys.readouterr().err
    assert not out.exists() and file.read_text() == "not a directory", "something was written"
    tried("python -m proofflow.prover (arguments)")


def _bundle_edit(fn):
    def edit(d: Path, f):
        _json_edit(d / "manifest.json", fn)
    return edit


def _swap(d: Path, f):
    a, b = (d / "partition-0000.proof").read_bytes(), (d / "partition-0001.proof").read_bytes()
    (d / "partition-0000.proof").write_bytes(b)
    (d / "partition-0001.proof").write_bytes(a)


BUNDLE_CASES = {  # mutation of a copy of the bundle -> exit code, message on stdout/stderr
    "manifest missing": (lambda d, f: (d / "manifest.json").unlink(), 2, "not a proof bundle"),
    "manifest not JSON": (lambda d, f: (d / "manifest.json").write_text("{"), 2, "is not readable JSON"),
    "manifest of another format": (_bundle_edit(lambda j: j.update(format="zk/0")), 2, "is not a proofflow"),
    "manifest partitions not a list": (_bundle_edit(lambda j: j.update(partitions=7)), 2, "is not a proofflow"),
    "manifest entry without its proof": (_bundle_edit(lambda j: j["partitions"][0].pop("proof")), 2, "is unusable"),
    "public input not hex": (_bundle_edit(lambda j: j["partitions"][1]["public_inputs"].__setitem__(0, "zz")), 2,
                             "is unusable"),
    "proof truncated": (lambda d, f: _truncate(d / "partition-0001.proof"), 2, "a proof is 192 bytes, got 96"),
    "proof missing": (lambda d, f: (d / "partition-0000.proof").unlink(), 2, "is unusable"),
    "vk.json corrupted": (lambda d, f: (d / "vk.json").write_text("[]"), 2, "malformed verifying key"),
    "proof corrupted": (lambda d, f: _flip(d / "partition-0001.proof", 0.1), 1, "partition 1: INVALID"),
    "proofs swapped": (_swap, 1, "0/2 proofs verify"),
    "public input altered": (_bundle_edit(lambda j: j["partitions"][0]["public_inputs"].__setitem__(0, "0x5")), 1,
                             "partition 0: INVALID (pairing check failed)"),
    "public inputs missing": (_bundle_edit(lambda j: j["partitions"][0]["public_inputs"].pop()), 1,
                              "takes 2 public inputs, got 1"),
    "vk of another key": (lambda d, f: shutil.copy(f["other"] / "vk.json", d / "vk.json"), 1, "0/2 proofs verify"),
}


@pytest.mark.parametrize("case", list(BUNDLE_CASES))
def test_prover_cli_verify_names_what_is_wrong_with_a_bundle(case, files, tmp_path, capsys):
    from proofflow.prover import cli
    d = tmp_path / "bundle"
    shutil.copytree(files["bundle"], d)
    mutate, code, msg = BUNDLE_CASES[case]
    mutate(d, files)
    before = _listing(d)
    assert cli.main(["verify", str(d)]) == code
    out = capsys.readouterr()
    assert msg in out.out + out.err
    assert _listing(d) == before, "verify changed the bundle"
    tried("python -m proofflow.prover verify (bundles)")


PROOFFLOW_CASES = {  # argv -> exit code, message
    "run --log2 7": (["run", "--log2", "7"], 2, "log2 must be in 8..27, got 7"),
    "run --log2 ten": (["run", "--log2", "ten"], 2, "not an integer: 'ten'"),
    "run --partitions 0": (["run", "--partitions", "0"], 2, "partitions must be in 1..64, got 0"),
    "run --partitions 65": (["run", "--partitions", "65"], 2, "partitions must be in 1..64, got 65"),
    "run --backend tpu": (["run", "--backend", "tpu"], 2, "invalid choice: 'tpu'"),
    "run --staging mapped": (["run", "--staging", "mapped"], 2, "invalid choice: 'mapped'"),
    "run --circuit sha256": (["run", "--circuit", "sha256"], 2, "unknown circuit 'sha256'"),
    "run --seed -1": (["run", "--seed", "-1"], 2, "seed must be in 0.."),
    "run --seed 2^63": (["run", "--seed", str(1 << 63)], 2, "seed must be in 0..9223372036854775807"),
    "setup --gpu-slots 0": (["setup", "--gpu-slots", "0"], 2, "gpu-slots must be in 1.."),
    "summary of no run": (["summary", "no-such-run"], 2, "no run 'no-such-run'"),
    "report of no run": (["report", "no-such-run"], 2, "no run 'no-such-run'"),
    "calibrate --device tpu": (["calibrate", "--device", "tpu"], 2, "unknown device 'tpu'"),
    "calibrate --device cuda:x": (["calibrate", "--device", "cuda:x"], 2, "unknown device 'cuda:x'"),
    "calibrate --min-log2 0": (["calibrate", "--device", "cpu", "--min-log2", "0"], 2, "must satisfy 1 <= min"),
    "calibrate --max-log2 40": (["calibrate", "--device", "cpu", "--max-log2", "40"], 2, "max <= 27"),
    "calibrate --reps 0": (["calibrate", "--device", "cpu", "--reps", "0"], 2, "--reps and --min-log2 must be"),
    "no command": ([], 2, "required: COMMAND"),
}


@pytest.mark.parametrize("case", list(PROOFFLOW_CASES))
def test_proofflow_cli_refuses_bad_arguments(case, tmp_path, monkeypatch, capsys):
    from proofflow import cli
    from proofflow.timing import TimingStore
    url = f"sqlite:///{tmp_path / 'timing.db'}"
    monkeypatch.setenv("PROOFFLOW_DB_URL", url)
    argv, code, msg = PROOFFLOW_CASES[case]
    home = tmp_path / "home"
    if argv[:1] == ["run"]:
        argv = argv + ["--home", str(home)]
    try:
        got = cli.main(argv)
    except SystemExit as exc:
        got = exc.code
    assert got == code
    assert msg in capsys.readouterr().err
    assert not home.exists(), "a bad run was set up"
    if (tmp_path / "timing.db").exists():
        store = TimingStore(url)
        assert store.calibrations() == [] and store.query("SELECT count(*) AS n FROM runs")[0]["n"] == 0
    tried("proofflow CLI")


# --- proof_run's params --------------------------------------------------------------------------
PARAM_CASES = {  # conf -> message (validate_params, as the validate task and proof_batch call it)
    "log2 a string": ({"log2": "10"}, "log2 must be an integer, got '10'"),
    "log2 a float": ({"log2": 10.0}, "log2 must be an integer, got 10.0"),
    "log2 a bool": ({"log2": True}, "log2 must be an integer, got True"),
    "log2 null": ({"log2": None}, "log2 must be an integer, got None"),
    "log2 too small": ({"log2": 7}, "log2 must be in 8..27, got 7"),
    "log2 too large": ({"log2": 31}, "log2 must be in 8..27, got 31"),
    "partitions negative": ({"partitions": -3}, "partitions must be in 1..64, got -3"),
    "partitions a list": ({"partitions": [4]}, "partitions must be an integer, got [4]"),
    "seed negative": ({"seed": -1}, "seed must be in 0..9223372036854775807, got -1"),
    "seed beyond 64 bits": ({"seed": 1 << 64}, "seed must be in 0..9223372036854775807"),
    "circuit unknown": ({"circuit": "sha256"}, "unknown circuit 'sha256'"),
    "circuit a number": ({"circuit": 5}, "unknown circuit 5"),
    "backend unknown": ({"backend": "tpu"}, "backend must be one of auto, cpu, gpu, got 'tpu'"),
    "staging unknown": ({"staging": "mapped"}, "staging must be one of pinned, pageable, got 'mapped'"),
    "a misspelt parameter": ({"partiton": 2}, "unknown parameter(s) 'partiton'"),
    "several problems at once": ({"log2": 99, "backend": "tpu", "x": 1},
                                 "unknown parameter(s) 'x'"),
    "gpu without a GPU": ({"backend": "gpu"}, "backend 'gpu' asked for, but no GPU is visible"),
}


@pytest.mark.parametrize("case", list(PARAM_CASES))
def test_validate_names_each_bad_param(case):
    from proofflow.spec import InvalidParams, validate_params
    conf, msg = PARAM_CASES[case]
    with pytest.raises(InvalidParams) as err:
        validate_params(conf, gpu_available=lambda: False)
    assert msg in str(err.value)
    if case == "several problems at once":  # one message naming every problem
        assert "log2 must be in 8..27" in str(err.value) and "backend must be one of" in str(err.value)
    tried("proof_run params (validate)")


DAG_SCHEMA_CASES = {  # conf rejected by the params' JSON schema before a run is created
    "partitions a string": {"partitions": "4"},
    "log2 a bool": {"log2": True},
    "seed negative": {"seed": -1},
    "seed beyond 64 bits": {"seed": 1 << 63},
    "backend null": {"backend": None},
}


@pytest.mark.parametrize("case", list(DAG_SCHEMA_CASES))
def test_dag_test_refuses_conf_the_schema_rejects(case, proof_run_dag):
    from airflow.sdk.exceptions import ParamValidationError
    conf = DAG_SCHEMA_CASES[case]
    with pytest.raises(ParamValidationError, match=next(iter(conf))):
        proof_run_dag.test(run_conf=conf)
    tried("proof_run params (dag.test, schema)")


def test_dag_test_fails_a_misspelt_param_in_validate_before_any_work(proof_run_dag, monkeypatch, tmp_path):
    from proofflow.prover import layout
    from proofflow.timing import TimingStore
    url = f"sqlite:///{tmp_path / 'timing.db'}"
    monkeypatch.setenv("PROOFFLOW_DB_URL", url)
    monkeypatch.setenv("PROOFFLOW_BUNDLES", str(tmp_path / "bundles"))
    dr = proof_run_dag.test(run_conf={"log2": 8, "partitons": 2})
    assert str(getattr(dr.state, "value", dr.state)) == "failed"
    states = {ti.task_id: str(getattr(ti.state, "value", ti.state)) for ti in dr.get_task_instances()}
    assert states["validate"] == "failed" and states["setup"] == "upstream_failed"
    assert {r["task_id"] for r in TimingStore(url).timings("proof_run", dr.run_id)} <= {"validate", "cleanup_scratch"}
    assert not layout.run_dir("proof_run", dr.run_id).exists() and not (tmp_path / "bundles").exists()
    tried("proof_run params (dag.test, validate)")


# --- the staged segments prove_gpu reads, the proofs finalize_partition reads ---------------------
@pytest.fixture(scope="module")
def staged_run(tmp_path_factory):
    """A 2-partition run driven up to stage (proof_tasks), in this process; its segments in
    the run's own shared staging (tests select it with ``_staging``)."""
    from proof_tasks import commit, run_attempt, task_order
    root = tmp_path_factory.mktemp("staged")
    env = {"PROOFFLOW_HOME": str(root / "home"), "PROOFFLOW_DB_URL": f"sqlite:///{root / 'timing.db'}",
           "PROOFFLOW_SCRATCH": str(root / "scratch"), "PROOFFLOW_PARAMS_CACHE": str(root / "params"),
           "PROOFFLOW_BUNDLES": str(root / "bundles"), "PROOFFLOW_RUNTIME": str(root / "rt"),
           "PROOFFLOW_SHARED_STAGING": str(root / "shm")}
    mp = pytest.MonkeyPatch()
    for k, v in env.items():
        mp.setenv(k, v)
    conf = {"log2": LOG2, "partitions": 2, "backend": "cpu", "seed": 2}
    for task, mi in [t for t in task_order(2) if t[0] not in ("partition.prove_gpu", "partition.finalize_partition",
                                                                "finalize_run", "cleanup_scratch")]:
        run_attempt(root / "xcom", "bad-scratch", task, mi, 1, conf)
        commit(root / "xcom", "bad-scratch", task, mi, 1)
    yield root
    from proofflow.prover.service.client import stop_all
    stop_all(root / "rt")
    mp.undo()


def _staging(root: Path, monkeypatch):
    """The module fixture's shared staging, for this test (the autouse fixture gave it another)."""
    from proofflow.prover.staging.shared import SharedStaging
    monkeypatch.setenv("PROOFFLOW_SHARED_STAGING", str(root / "shm"))
    return SharedStaging.from_settings()


def _segments(staging) -> dict:
    """{partition: (lease, .seg path, .json path)}."""
    out = {}
    for lease in staging.leases():
        out[int(lease.owner[-4:])] = (lease, staging.root / f"{lease.id}.seg", staging.root / f"{lease.id}.json")
    return out


def _edit_lease(meta: Path, **fields):
    data = json.loads(meta.read_text())
    data.update(fields)
    meta.write_text(json.dumps(data))


def _segment_words(seg: Path, lease) -> tuple[np.ndarray, np.ndarray]:
    """(a/b/c, witness) of a segment file, writable in place."""
    words = np.memmap(seg, dtype=np.uint64, mode="r+")
    n, nv = lease.n, lease.num_variables
    return words[:3 * n * 4].reshape(3, n, 4), words[3 * n * 4:(3 * n + nv) * 4].reshape(nv, 4)


def _unsatisfying(witness: np.ndarray):
    from proofflow.prover.curves.bls12_381 import BLS12_381
    from proofflow.prover.field.fr import Fr
    witness[7] = Fr.of(BLS12_381).from_ints([12345])[0]  # a private variable of the MiMC chain, changed


def _foreign_abc(segs):
    (lease0, seg0, _), (lease1, seg1, _) = segs[0], segs[1]
    _segment_words(seg0, lease0)[0][:] = _segment_words(seg1, lease1)[0]


SEGMENT_CASES = {  # mutation of partition 0's staged segment -> the message prove_gpu fails with
    "segment gone": (lambda segs: (segs[0][1].unlink(), segs[0][2].unlink()), "is gone from"),
    "segment truncated": (lambda segs: os.truncate(segs[0][1], 4096), "its lease needs"),
    "segment not fully written": (lambda segs: _edit_lease(segs[0][2], state="writing"), "not fully written"),
    "segment of another partition": (lambda segs: _edit_lease(segs[0][2], owner=segs[1][0].owner),
                                     "/p0001, not proof_run"),
    "segment of another size": (lambda segs: _edit_lease(segs[0][2], n=segs[0][0].n // 2), "the job's circuit has"),
    "witness not satisfying the circuit": (lambda segs: _unsatisfying(_segment_words(segs[0][1], segs[0][0])[1]),
                                           "the witness does not satisfy the circuit: witness does not satisfy "
                                           "constraint"),
    "a/b/c of another partition": (_foreign_abc, "the a/b/c vectors were not computed from this witness"),
}


@pytest.mark.parametrize("in_process", [False, True], ids=["service", "in-process"])
@pytest.mark.parametrize("case", list(SEGMENT_CASES))
def test_prove_gpu_refuses_bad_segments_and_writes_no_proof(case, in_process, staged_run, monkeypatch):
    from airflow.sdk.exceptions import AirflowFailException
    from proof_tasks import run_attempt
    from proofflow.prover import layout
    if in_process:
        monkeypatch.setenv("PROOFFLOW_GPU_SERVICE", "0")
    segs = _segments(_staging(staged_run, monkeypatch))
    saved = {p: p.read_bytes() for _, seg, meta in segs.values() for p in (seg, meta)}
    d = layout.partition_dir("proof_run", "bad-scratch", 0)
    mutate, msg = SEGMENT_CASES[case]
    try:
        mutate(segs)
        with pytest.raises(AirflowFailException) as err:  # no retry: the inputs themselves are wrong
            run_attempt(staged_run / "xcom", "bad-scratch", "partition.prove_gpu", 0, 1)
        assert msg in str(err.value)
        assert not (d / "proof.bin").exists(), "a proof was written from bad inputs"
    finally:
        for path, data in saved.items():
            path.write_bytes(data)
    tried("prove_gpu staged segments")


PROOF_CASES = {  # mutation of a good proof.bin -> finalize_partition's message
    "proof truncated": (_truncate, "is not a proof (a proof is 192 bytes"),
    "proof corrupted": (lambda p: _flip(p, 0.1), "is not a proof (proof bytes are not valid curve points"),
    "proof of another partition": (None, "the proof does not verify"),
}


@pytest.mark.parametrize("case", list(PROOF_CASES))
def test_finalize_partition_refuses_a_bad_proof_and_publishes_nothing(case, staged_run, monkeypatch):
    from airflow.sdk.exceptions import AirflowFailException
    from proof_tasks import commit, run_attempt
    from proofflow.prover import layout
    from proofflow.airflow.operators.proof import bundle_dir
    _staging(staged_run, monkeypatch)
    for p in (0, 1):  # proved once: a proof releases its segment
        if not (layout.partition_dir("proof_run", "bad-scratch", p) / "proof.bin.good").exists():
            run_attempt(staged_run / "xcom", "bad-scratch", "partition.prove_gpu", p, 1)
            commit(staged_run / "xcom", "bad-scratch", "partition.prove_gpu", p, 1)
            shutil.copy(layout.partition_dir("proof_run", "bad-scratch", p) / "proof.bin",
                        layout.partition_dir("proof_run", "bad-scratch", p) / "proof.bin.good")
        good = layout.partition_dir("proof_run", "bad-scratch", p) / "proof.bin.good"
        shutil.copy(good, good.with_suffix(""))
    proof = layout.partition_dir("proof_run", "bad-scratch", 0) / "proof.bin"
    mutate, msg = PROOF_CASES[case]
    if mutate is None:
        shutil.copy(proof.parent.parent / "p0001" / "proof.bin", proof)
    else:
        mutate(proof)
    with pytest.raises(AirflowFailException, match=msg.replace("(", r"\(")):
        run_attempt(staged_run / "xcom", "bad-scratch", "partition.finalize_partition", 0, 1)
    assert not list(bundle_dir("proof_run", "bad-scratch").glob("*.proof")), "a bad proof was published"
    tried("finalize_partition proof files")


# --- the prover service's jobs ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def svc(tmp_path_factory, files):
    from proofflow.prover.service.client import ServiceClient, stop_all
    root = tmp_path_factory.mktemp("svc")
    mp = pytest.MonkeyPatch()
    mp.setenv("PROOFFLOW_RUNTIME", str(root / "rt"))
    mp.setenv("PROOFFLOW_SHARED_STAGING", str(root / "shm"))
    client = ServiceClient("cpu", 0, idle_s=120)
    client.ensure_running()
    d, n, public = partition(0)
    d1, _, _ = partition(1)
    corrupt = root / "corrupt-key"
    shutil.copytree(files["key"], corrupt)
    _flip(corrupt / "h_query.npy", 0.6)  # the service loads keys without hashing them
    from proofflow.prover.staging.shared import SharedStaging
    yield {"client": client, "root": root, "d": d, "d1": d1, "n": n, "public": public, "corrupt": corrupt,
           "key": files["key"], "staging": SharedStaging.from_settings()}
    stop_all(root / "rt")
    mp.undo()


def _raw(path: Path, data: bytes) -> dict:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(30)
    s.connect(str(path))
    with s, s.makefile("rwb") as f:
        f.write(data)
        f.flush()
        s.shutdown(socket.SHUT_WR)
        line = f.readline()
    return json.loads(line) if line else {}


RAW_CASES = {  # bytes on the socket -> error type, message
    "not JSON": (b"hello\n", "ProtocolError", "not JSON"),
    "a JSON array": (b"[1, 2]\n", "ProtocolError", "must be a JSON object"),
    "a line over 1 MiB": (b'{"op": "' + b"x" * (1 << 20) + b'"}\n', "ProtocolError", "too long or cut off"),
    "cut off before its newline": (b'{"op": "status"', "ProtocolError", "too long or cut off"),
    "no op": (b"{}\n", "ProtocolError", "unknown op None"),
    "an unknown op": (b'{"op": "format_disk"}\n', "ProtocolError", "unknown op 'format_disk'"),
}

JOB_CASES = {  # the job (from a good one) -> message (all refused as InputError)
    "not an object": (lambda j, s: [j], "the job must be a JSON object"),
    "a field missing": (lambda j, s: {k: v for k, v in j.items() if k != "n"}, "job field 'n' must be a int"),
    "n a string": (lambda j, s: {**j, "n": str(j["n"])}, "job field 'n' must be a int"),
    "n a bool": (lambda j, s: {**j, "n": True}, "job field 'n' must be a int"),
    "log2 a float": (lambda j, s: {**j, "log2": 8.0}, "job field 'log2' must be a int"),
    "n not a power of two": (lambda j, s: {**j, "n": 300}, "n must be a power of two"),
    "n of another size": (lambda j, s: {**j, "n": j["n"] * 2}, "the circuit's domain"),
    "log2 of another size": (lambda j, s: {**j, "log2": 9}, "is for mimc 2^8, the job is mimc 2^9"),
    "circuit of another kind": (lambda j, s: {**j, "circuit": "sha256"}, "is for mimc 2^8, the job is sha256"),
    "staging unknown": (lambda j, s: {**j, "staging": "mapped"}, "staging must be one of pinned, pageable"),
    "an unknown field": (lambda j, s: {**j, "urgency": 9}, "unknown job field(s) 'urgency'"),
    "priority unknown": (lambda j, s: {**j, "priority": "urgent"}, "priority must be one of high, normal, low"),
    "standin_s a string": (lambda j, s: {**j, "standin_s": "1"}, "standin_s must be a positive number"),
    "standin_s negative": (lambda j, s: {**j, "standin_s": -1}, "standin_s must be a positive number"),
    "no key there": (lambda j, s: {**j, "params_dir": str(s["root"] / "nowhere")}, "no proving key at"),
    "a corrupted key": (lambda j, s: {**j, "params_dir": str(s["corrupt"])}, "the proving key is corrupted"),
    "segment gone": (lambda j, s: {**j, "segment": "0123456789abcdef"}, "is gone from"),
    "segment id a path": (lambda j, s: {**j, "segment": "../../etc/passwd"}, "is not a staged segment's id"),
    "segment of another partition": (lambda j, s: {**j, "segment": s["d1"], "holder": "test/run/p0000"},
                                     "belongs to test/run/p0001, not test/run/p0000"),
    "segment truncated": (lambda j, s: _tamper(s, lambda seg, lease: os.truncate(seg, 4096)), "its lease needs"),
    "witness not satisfying the circuit": (
        lambda j, s: _tamper(s, lambda seg, lease: _unsatisfying(_segment_words(seg, lease)[1])),
        "the witness does not satisfy the circuit"),
    "a/b/c of another partition": (lambda j, s: _tamper(s, lambda seg, lease: _foreign_abc(_segments(s["staging"]))),
                                   "the a/b/c vectors were not computed from this witness"),
}


def _tamper(s, mutate) -> dict:
    """A copy of partition 0's segment, tampered, leased under the same holder (restored by
    the test after): the job for it."""
    staging = s["staging"]
    lease, seg, meta = _segments(staging)[0]
    s["restore"] = {p: p.read_bytes() for p in (seg, meta)}
    mutate(seg, lease)
    return job(s["key"], lease.id, s["n"], partition=0).to_wire()


@pytest.mark.parametrize("case", list(RAW_CASES))
def test_service_refuses_malformed_messages(case, svc):
    data, kind, msg = RAW_CASES[case]
    reply = _raw(svc["client"].path, data)
    assert reply["ok"] is False and reply["error_type"] == kind and msg in reply["error"]
    assert svc["client"].status()["ok"]  # still serving
    tried("prover service (messages)")


@pytest.mark.parametrize("case", list(JOB_CASES))
def test_service_refuses_bad_jobs_and_keeps_serving(case, svc, files):
    from proofflow.prover.service.client import ServiceError
    client = svc["client"]
    good = job(files["key"], svc["d"], svc["n"]).to_wire()
    make, msg = JOB_CASES[case]
    try:
        with pytest.raises(ServiceError) as err:
            raw_prove(client, make(good, svc))
    finally:
        for path, data in svc.pop("restore", {}).items():
            path.write_bytes(data)
    assert err.value.error_type == "InputError", err.value
    assert msg in str(err.value)
    assert client.status()["queued"] == 0, "a refused job was left queued"
    tried("prover service (jobs)")


def test_service_still_proves_after_every_bad_job(svc, files):
    reply = svc["client"].prove(job(files["key"], svc["d"], svc["n"]))
    assert verifies(files["key"], reply, svc["public"])


# --- timing rows ---------------------------------------------------------------------------------------
def _timing(**kw):
    t = time.time()
    row = dict(run_id="rows", dag_id="proof_run", task_id="partition.stage", map_index=0, try_number=1, partition=0,
               phase="read", host="h", device="cpu", start=t, end=t + 0.5)
    row.update(kw)
    return row


def _transfer(**kw):
    row = dict(run_id="rows", dag_id="proof_run", task_id="partition.stage", map_index=0, try_number=1, partition=0,
               direction="h2s", bytes=1 << 20, memory_kind="pageable", duration_s=0.01)
    row.update(kw)
    return row


ROW_CASES = {  # table, bad row -> the message naming its field
    "start a string": ("timings", _timing(start="yesterday"), "start must be a datetime or epoch seconds"),
    "end not finite": ("timings", _timing(end=float("nan")), "end must be a datetime or epoch seconds"),
    "end before start": ("timings", _timing(end=0.0), "is before start"),
    "try_number a string": ("timings", _timing(try_number="2"), "try_number must be an integer, got '2'"),
    "try_number zero": ("timings", _timing(try_number=0), "try_number must be >= 1, got 0"),
    "map_index a float": ("timings", _timing(map_index=0.5), "map_index must be an integer"),
    "partition negative": ("timings", _timing(partition=-2), "partition must be >= 0"),
    "phase missing": ("timings", {k: v for k, v in _timing().items() if k != "phase"}, "phase is missing"),
    "phase empty": ("timings", _timing(phase=""), "phase must not be empty"),
    "phase too long": ("timings", _timing(phase="p" * 65), "phase is longer than 64 characters"),
    "task_id null": ("timings", _timing(task_id=None), "task_id must not be null"),
    "duration negative": ("timings", _timing(duration_s=-1.0), "duration_s must be >= 0"),
    "an unknown column": ("timings", _timing(gpu="h200"), "unknown column(s) gpu"),
    "try_number a numpy int": ("timings", _timing(try_number=np.int64(1)), "try_number must be an integer"),
    "bytes negative": ("transfers", _transfer(bytes=-1), "bytes must be >= 0"),
    "bytes a float": ("transfers", _transfer(bytes=1e6), "bytes must be an integer"),
    "bytes beyond 64 bits": ("transfers", _transfer(bytes=1 << 64), "out of range for a 64-bit integer column"),
    "memory_kind unknown": ("transfers", _transfer(memory_kind="dram"), "memory_kind must be one of pinned"),
    "duration a string": ("transfers", _transfer(duration_s="fast"), "duration_s must be a finite number"),
    "gbps infinite": ("transfers", _transfer(gbps=float("inf")), "gbps must be a finite number"),
    "run state unknown": ("runs", {"state": "exploded"}, "state must be one of running, success, failed"),
    "run partitions a string": ("runs", {"partitions": "4"}, "partitions must be an integer"),
    "run seed beyond 64 bits": ("runs", {"seed": 1 << 64}, "seed is out of range"),
    "run started_at a string": ("runs", {"started_at": "now"}, "started_at must be a datetime"),
    "run field unknown": ("runs", {"proofs": 3}, "unknown column(s) proofs"),
}


@pytest.mark.parametrize("case", list(ROW_CASES))
def test_timing_store_refuses_bad_rows_and_writes_none_of_the_batch(case, store_url):
    from proofflow.timing import TimingStore
    from proofflow.timing.store import InvalidRow
    store = TimingStore(store_url)
    kind, bad, msg = ROW_CASES[case]
    run_id = f"rows-{time.time_ns()}"
    with pytest.raises(InvalidRow) as err:
        if kind == "timings":  # a good row first, in the same batch and transaction as the bad one
            store.record_attempt([_timing(run_id=run_id), {**bad, "run_id": run_id} if "run_id" in bad else bad],
                                 [_transfer(run_id=run_id)])
        elif kind == "transfers":
            store.record_attempt([_timing(run_id=run_id)], [_transfer(run_id=run_id, direction="h2d"),
                                                           {**bad, "run_id": run_id}])
        else:
            store.upsert_run("proof_run", run_id, **bad)
    assert msg in str(err.value)
    assert store.timings("proof_run", run_id) == [] and store.transfers("proof_run", run_id) == []
    assert store.run("proof_run", run_id) is None, "a half-written row"
    store.dispose()
    tried("timing rows")
