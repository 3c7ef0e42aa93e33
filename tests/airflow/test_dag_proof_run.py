"""proof_run through Airflow's dag.test(): DAG import hygiene, params, a whole run on the
SQLite and on the Postgres timing store, and bad parameters failing before any work."""
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from proofflow.spec import CIRCUITS, MAX_LOG2, MIN_LOG2, InvalidParams, validate_params

ROOT = Path(__file__).resolve().parents[2]
DAG_ID = "proof_run"
PARTITIONS = 4
PARTITION_PHASES = {
    "partition.synthesize": {"task", "synthesis", "staging_wait", "witness_map"},
    "partition.stage": {"task", "register"},
    # through the prover service (the default): its phases, all recorded by the task
    "partition.prove_gpu": {"task", "pool_wait", "prefetch", "mutex_wait", "h2d", "ntt", "msm",
                            "assemble", "finalize"},
    "partition.finalize_partition": {"task", "verify", "publish"},
}
# paid once, by the first partition that needs it (none when an earlier run paid it)
ONCE_PHASES = {"service_start", "key_load", "key_upload"}
RUN_PHASES = {
    "validate": {"task", "validate"},
    "prepare_scratch": {"task", "prepare"},
    "finalize_run": {"task", "manifest", "verify", "summary", "cleanup"},
    "cleanup_scratch": {"task", "cleanup"},
}


def test_every_dag_imports_without_errors_or_top_level_work(tmp_path):
    """Parsed in a fresh process: no import errors, prover never imported, nothing written."""
    home = tmp_path / "proofflow-home"
    code = (
        "import sys, json\n"
        "from airflow.dag_processing.dagbag import DagBag\n"
        f"bag = DagBag({str(ROOT / 'dags')!r})\n"
        "print(json.dumps({'errors': {k: str(v) for k, v in bag.import_errors.items()}, 'dags': sorted(bag.dag_ids),"
        " 'prover': sorted(m for m in sys.modules if m == 'proofflow.prover' or m.startswith('proofflow.prover.')),"
        " 'heavy': sorted(m for m in ('cupy', 'py_arkworks_bls12381', 'numpy') if m in sys.modules)}))\n")
    env = {**os.environ, "PROOFFLOW_HOME": str(home)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    info = json.loads(out.stdout.strip().splitlines()[-1])
    assert info["errors"] == {}
    assert {"proof_run", "proof_batch"} <= set(info["dags"])
    assert info["prover"] == [], "DAG files must not import prover at parse time"
    assert "cupy" not in info["heavy"] and "py_arkworks_bls12381" not in info["heavy"]
    assert not home.exists(), "parsing a DAG file must not create scratch, params or timing files"


def test_a_partition_s_light_tasks_import_no_engine():
    """Every task is a new process: stage, prove_gpu through the prover service and
    cleanup_scratch import only what they use (the segment bookkeeping, the service's client,
    the timing store), not numpy and the engine: ~0.1 CPU-s a process at 200 partitions a
    minute."""
    code = ("import sys\n"
            "import proofflow.airflow.operators.proof, proofflow.prover.errors, proofflow.prover.layout\n"
            "import proofflow.prover.staging.shared, proofflow.prover.service.client, proofflow.timing.store\n"
            "print(sorted(m for m in ('numpy', 'proofflow.prover.pipeline', 'proofflow.prover.groth16')"
            " if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "[]"


def test_params_schema_matches_prover_and_builds_the_form(proof_run_dag):
    from proofflow.prover import circuits
    from proofflow.prover.circuits.by_name import get_circuit
    assert set(CIRCUITS) == set(circuits.CIRCUITS)
    with pytest.raises(ValueError, match=f"in {MIN_LOG2}..{MAX_LOG2}"):
        get_circuit("mimc", MAX_LOG2 + 1)
    params = proof_run_dag.params
    assert set(params.keys()) == {"circuit", "log2", "curve", "partitions", "backend", "staging", "seed", "inputs",
                                  "priority", "request_id", "partitions_per_task"}
    for name in params.keys():
        param = params.get_param(name)
        assert param.schema.get("title") and param.description, name
        # no top-level bound: the 3.3 form would clamp an out-of-range entry to it silently
        assert "minimum" not in param.schema and "maximum" not in param.schema, name
    from airflow.sdk.definitions.param import ParamValidationError
    for name, bad, good, message, shown in (("partitions", 0, 64, "0 is less than the minimum of 1", "1..64"),
                                            ("log2", 99, 8, "99 is greater than the maximum of 27", "8..27"),
                                            ("seed", -1, 0, "-1 is less than the minimum of 0", "0..2^63-1"),
                                            ("partitions_per_task", 65, 4, "65 is greater than the maximum of 64",
                                             "1..64")):
        param = params.get_param(name)
        with pytest.raises(ParamValidationError, match=message):
            param.resolve(bad)
        assert param.resolve(good) == good and shown in param.description
    assert params.get_param("backend").schema["enum"] == ["auto", "cpu", "gpu"]
    from proofflow.prover.curves import registry
    curve = params.get_param("curve")  # null, the first choice: the circuit's curve
    assert curve.schema["enum"] == [None, *registry.NAMES] and params["curve"] is None
    assert set(curve.schema["values_display"]) == {"null", *registry.NAMES}
    assert curve.resolve(None) is None and curve.resolve("bn254") == "bn254"
    with pytest.raises(ParamValidationError, match="'secp256k1' is not one of"):
        curve.resolve("secp256k1")
    assert "mimc" in params.get_param("circuit").schema["examples"]
    assert params.get_param("inputs").resolve(None) is None
    assert params.get_param("request_id").resolve(None) is None and params.get_param("request_id").resolve("r-1:2")
    with pytest.raises(ParamValidationError, match="does not match"):
        params.get_param("request_id").resolve("two words")
    assert set(params.get_param("staging").schema["values_display"]) == {"pinned", "pageable"}
    priority = params.get_param("priority")  # a select of the three, normal by default
    assert priority.schema["enum"] == ["high", "normal", "low"] == list(priority.schema["values_display"])
    assert params["priority"] == "normal"
    with pytest.raises(ParamValidationError, match="'urgent' is not one of"):
        priority.resolve("urgent")
    prove = proof_run_dag.get_task("partition.prove_gpu")
    assert prove.pool == "gpu"


@pytest.mark.parametrize("bad,msg", [
    ({"partitions": 0}, "partitions must be in 1..64, got 0"),
    ({"partitions": 65}, "partitions must be in 1..64"),
    ({"log2": 7}, "log2 must be in 8..27, got 7"),
    ({"log2": 28}, "log2 must be in 8..27"),
    ({"circuit": "sha256"}, "unknown circuit 'sha256'"),
    ({"backend": "tpu"}, "backend must be one of auto, cpu, gpu"),
    ({"staging": "mapped"}, "staging must be one of pinned, pageable"),
    ({"log2": "10"}, "log2 must be an integer"),
    ({"request_id": "two words"}, "request_id must be 1 to 128 letters, digits or . _ : -"),
    ({"request_id": "x" * 129}, "request_id must be 1 to 128"),
    ({"partitions_per_task": 0}, "partitions_per_task must be in 1..64, got 0"),
    ({"partitions_per_task": "2"}, "partitions_per_task must be an integer"),
])
def test_validate_rejects_bad_params_with_a_clear_message(bad, msg):
    with pytest.raises(InvalidParams, match=msg.replace("(", r"\(")):
        validate_params(bad, gpu_available=lambda: False)


def test_gpu_absent_is_a_clear_error():
    with pytest.raises(InvalidParams, match="backend 'gpu' asked for, but no GPU is visible"):
        validate_params({"backend": "gpu"}, gpu_available=lambda: False)
    assert validate_params({"backend": "auto"}, gpu_available=lambda: False).backend == "cpu"


IN_PROCESS_PROVE = {"task", "pool_wait", "key_load", "load", "h2d", "ntt", "msm", "assemble", "finalize"}


def _check_run(store, dr, staging="pageable", prove_phases=None, partitions=PARTITIONS, chunk=1):
    """The run's proofs, rows and transfers; ``chunk``: its partitions_per_task (a chunk's
    prove_gpu waited for its pool slot once, on its first partition's rows)."""
    from proofflow.prover.bundle import verify_bundle
    assert str(getattr(dr.state, "value", dr.state)) == "success"
    run = store.run(DAG_ID, dr.run_id)
    assert run["state"] == "success" and run["proofs_verified"] == partitions and run["wall_s"] > 0
    assert run["staging"] == staging  # what really held a/b/c: the CPU backend pins nothing
    assert (run["backend_requested"], run["staging_requested"]) == ("cpu", dr.conf["staging"])
    results = verify_bundle(run["bundle_dir"])
    assert len(results) == partitions and all(r.ok for r in results)

    rows = store.timings(DAG_ID, dr.run_id)
    keys = Counter((r["task_id"], r["map_index"], r["try_number"], r["phase"]) for r in rows)
    assert max(keys.values()) == 1, "one row per task, partition and phase"
    for r in rows:
        assert r["end"] >= r["start"], r
        assert r["duration_s"] >= 0
        assert r["try_number"] == 1 and r["host"]
    got: dict = {}
    for r in rows:
        got.setdefault((r["task_id"], r["map_index"]), set()).add(r["phase"])
        if r["task_id"].startswith("partition."):
            assert r["partition"] == r["map_index"]
    for task, phases in RUN_PHASES.items():
        assert got.pop((task, -1)) == phases, task
    setup = got.pop(("setup", -1))
    assert {"task", "lock_wait"} <= setup and ({"setup", "save"} <= setup or "load_cached" in setup)
    once = Counter()
    expected = {**PARTITION_PHASES, **({"partition.prove_gpu": prove_phases} if prove_phases else {})}
    for task, phases in expected.items():
        for i in range(partitions):
            got_phases = got.pop((task, i))
            want = phases - {"pool_wait"} if task == "partition.prove_gpu" and i % chunk else phases
            extra = got_phases - want
            assert want <= got_phases and extra <= ONCE_PHASES, (task, i, got_phases)
            once.update(extra)
    assert max(once.values(), default=0) <= 1, once
    assert got == {}

    transfers = store.transfers(DAG_ID, dr.run_id)
    assert Counter((t["task_id"], t["direction"]) for t in transfers) == {
        ("partition.stage", "h2s"): partitions, ("partition.prove_gpu", "h2d"): partitions,
        ("partition.prove_gpu", "h2d_witness"): partitions}
    n = 1 << 10
    from proofflow.prover.circuits.by_name import get_circuit
    variables = get_circuit("mimc", 10).constraint_system.num_variables
    for t in transfers:
        assert t["duration_s"] >= 0
        assert t["memory_kind"] == staging
        # a/b/c cross no host copy between synthesis and the upload: h2s is 0 bytes
        assert t["bytes"] == {"h2s": 0, "h2d": 3 * n * 32, "h2d_witness": variables * 32}[t["direction"]]

    from proofflow.prover import files, layout
    assert not layout.run_dir(DAG_ID, dr.run_id).exists(), "scratch is removed when the run finishes"
    from proofflow.prover.staging.shared import SharedStaging
    assert SharedStaging.from_settings().leases() == [], "every partition's segment is released"
    from proofflow.timing.report import run_report
    assert [h["host_copy_bytes"] for h in run_report(store, DAG_ID, dr.run_id)["h2d"]] == [0] * partitions
    assert files.stale_temporaries(Path(run["bundle_dir"])) == []
    return rows


@pytest.mark.slow
def test_dag_test_on_sqlite(proof_run_dag, monkeypatch, tmp_path):
    from proofflow.timing import TimingStore
    url = f"sqlite:///{tmp_path / 'timing.db'}"
    monkeypatch.setenv("PROOFFLOW_DB_URL", url)
    dr = proof_run_dag.test(run_conf={"log2": 10, "partitions": PARTITIONS, "backend": "cpu", "staging": "pinned"})
    _check_run(TimingStore(url), dr)


@pytest.mark.slow
def test_dag_test_proving_in_the_task_process(proof_run_dag, monkeypatch, tmp_path):
    """PROOFFLOW_GPU_SERVICE=0: prove_gpu proves in its own process (the naive design the
    pipeline benchmark compares with); the same proofs and rows, its own phases."""
    from proofflow.timing import TimingStore
    url = f"sqlite:///{tmp_path / 'timing.db'}"
    monkeypatch.setenv("PROOFFLOW_DB_URL", url)
    monkeypatch.setenv("PROOFFLOW_GPU_SERVICE", "0")
    dr = proof_run_dag.test(run_conf={"log2": 10, "partitions": PARTITIONS, "backend": "cpu", "staging": "pinned"})
    _check_run(TimingStore(url), dr, prove_phases=IN_PROCESS_PROVE)


@pytest.mark.slow
def test_dag_test_on_postgres_through_the_connection(proof_run_dag, pg_url, monkeypatch):
    """The timing store named by the Airflow connection proofflow_timing (read by the tasks
    through the task SDK), on the local Postgres; staging pageable this time."""
    from proofflow.timing import TimingStore
    monkeypatch.delenv("PROOFFLOW_DB_URL", raising=False)
    monkeypatch.setenv("AIRFLOW_CONN_PROOFFLOW_TIMING", json.dumps({"conn_type": "generic", "extra": {"url": pg_url}}))
    dr = proof_run_dag.test(run_conf={"log2": 10, "partitions": PARTITIONS, "backend": "cpu", "staging": "pageable"})
    _check_run(TimingStore(pg_url), dr, staging="pageable")


@pytest.mark.slow
def test_partitions_in_chunks_of_several_per_task(proof_run_dag, monkeypatch, tmp_path):
    """partitions_per_task 2 over 5 partitions: three chains of tasks (the last of one
    partition), each task doing its chunk's partitions one after another; every partition
    has its own proof, rows (its index as their map index), transfers and H2D figure, and a
    chunk's partitions hold the pool slot one after another, never at once."""
    from proofflow.timing import TimingStore
    url = f"sqlite:///{tmp_path / 'timing.db'}"
    monkeypatch.setenv("PROOFFLOW_DB_URL", url)
    dr = proof_run_dag.test(run_conf={"log2": 10, "partitions": 5, "partitions_per_task": 2, "backend": "cpu",
                                      "staging": "pinned"})
    rows = _check_run(TimingStore(url), dr, partitions=5, chunk=2)
    from airflow.utils.session import create_session
    with create_session() as session:
        mapped = sorted(ti.map_index for ti in dr.get_task_instances(session=session)
                        if ti.task_id == "partition.prove_gpu")
    assert mapped == [0, 1, 2]
    held = {r["partition"]: (r["start"], r["end"]) for r in rows
            if r["task_id"] == "partition.prove_gpu" and r["phase"] == "task"}
    assert sorted(held) == [0, 1, 2, 3, 4]
    for p in (0, 2):  # chunks of two: the second partition holds the slot from the end of the first's
        assert held[p + 1][0] >= held[p][1], p


def test_a_run_of_one_partition(proof_run_dag, monkeypatch, tmp_path):
    """The mapped group's only result reaches finalize_run unwrapped: still one proof. The run
    records what ran beside what its conf (kept as typed) asked for: the CPU backend pins nothing."""
    from proofflow.timing import TimingStore
    from proofflow.timing.summary import run_figures
    url = f"sqlite:///{tmp_path / 'timing.db'}"
    monkeypatch.setenv("PROOFFLOW_DB_URL", url)
    dr = proof_run_dag.test(run_conf={"log2": 8, "partitions": 1, "backend": "cpu", "staging": "pinned"})
    assert str(getattr(dr.state, "value", dr.state)) == "success"
    store = TimingStore(url)
    run = store.run(DAG_ID, dr.run_id)
    assert run["proofs_verified"] == 1
    assert dr.conf["staging"] == "pinned"
    assert (run["backend"], run["backend_requested"], run["staging"], run["staging_requested"]) == (
        "cpu", "cpu", "pageable", "pinned")
    assert {t["memory_kind"] for t in store.transfers(DAG_ID, dr.run_id)} == {"pageable"}
    summary = json.loads((Path(run["bundle_dir"]) / "run-summary.json").read_text())
    assert (summary["staging"], summary["staging_requested"]) == ("pageable", "pinned")
    fig = run_figures(store, DAG_ID, dr.run_id)
    assert fig["device_kind"] == "CPU" and fig["staging_requested"] == "pinned"


@pytest.mark.parametrize("circuit", ["mimc", "bits"])
def test_a_built_in_circuit_runs_on_bn254(proof_run_dag, monkeypatch, tmp_path, circuit):
    """curve bn254 for a built-in family: its key, its proofs (128 bytes), the bundle and the
    run's row and summary are BN254's, and every proof verifies."""
    from proofflow.prover import bundle, layout
    from proofflow.prover.curves.bn254 import BN254
    from proofflow.timing import TimingStore
    url = f"sqlite:///{tmp_path / 'timing.db'}"
    monkeypatch.setenv("PROOFFLOW_DB_URL", url)
    dr = proof_run_dag.test(run_conf={"circuit": circuit, "log2": 8, "partitions": 2, "curve": "bn254",
                                      "backend": "cpu"})
    assert str(getattr(dr.state, "value", dr.state)) == "success"
    run = TimingStore(url).run(DAG_ID, dr.run_id)
    assert (run["circuit"], run["curve"], run["proofs_verified"]) == (circuit, "bn254", 2)
    out = Path(run["bundle_dir"])
    manifest = bundle.read_manifest(out)
    assert (manifest["curve"], manifest["format"]) == ("bn254", BN254.key_format)
    assert [r.ok for r in bundle.verify_bundle(out)] == [True, True]
    assert [(out / bundle.proof_name(p)).stat().st_size for p in range(2)] == [BN254.proof_bytes] * 2
    assert json.loads((out / "run-summary.json").read_text())["curve"] == "bn254"
    from proofflow.timing.summary import note_markdown, run_figures
    assert f"{circuit} 2^8 over bn254, 2 partition(s)" in note_markdown(run_figures(TimingStore(url), DAG_ID, dr.run_id))
    assert json.loads((layout.params_dir(circuit, 8, 0, "bn254") / "params.json").read_text())["curve"] == "bn254"


def test_schema_rejects_bad_conf_before_the_run(proof_run_dag):
    from airflow.sdk.exceptions import ParamValidationError
    with pytest.raises(ParamValidationError, match="partitions"):
        proof_run_dag.test(run_conf={"partitions": 0})


def test_gpu_absent_fails_in_validate_before_any_work(proof_run_dag, monkeypatch, tmp_path):
    from proofflow.prover.device import available as gpu_available
    if gpu_available():
        pytest.skip("a GPU is visible here")
    from proofflow.timing import TimingStore
    url = f"sqlite:///{tmp_path / 'timing.db'}"
    monkeypatch.setenv("PROOFFLOW_DB_URL", url)
    dr = proof_run_dag.test(run_conf={"log2": 10, "partitions": 2, "backend": "gpu"})
    assert str(getattr(dr.state, "value", dr.state)) == "failed"
    states = {ti.task_id: str(getattr(ti.state, "value", ti.state)) for ti in dr.get_task_instances()}
    assert states["validate"] == "failed"
    assert states["setup"] == "upstream_failed"
    tasks = {r["task_id"] for r in TimingStore(url).timings(DAG_ID, dr.run_id)}
    assert tasks == {"validate", "cleanup_scratch"}, "nothing but validate and the teardowns ran"


def test_proof_batch_claims_pending_work_once(tmp_path, monkeypatch):
    from proofflow.airflow.pending import claim
    d = tmp_path / "pending"
    d.mkdir()
    (d / "a.json").write_text(json.dumps({"log2": 10, "partitions": 2}))
    (d / "b.json").write_text(json.dumps({"partitions": 0}))
    (d / "c.json").write_text("not json")
    assert claim(d) == [{"log2": 10, "partitions": 2}]
    assert sorted(p.name for p in (d / "claimed").iterdir()) == ["a.json"]
    assert sorted(p.name for p in (d / "rejected").iterdir()) == ["b.json", "b.json.error", "c.json", "c.json.error"]
    assert "partitions must be in 1..64" in (d / "rejected" / "b.json.error").read_text()
    assert claim(d) == []  # claimed work is never triggered twice


@pytest.mark.parametrize("cron, schedule", [("0 3 * * *", "0 3 * * *"), ("none", "None"), (" None ", "None")])
def test_proof_batch_schedule_from_env(airflow_home, cron, schedule):
    """PROOFFLOW_BATCH_CRON: proof_batch's cron, or ``none``: no schedule (triggered only)."""
    code = ("from airflow.dag_processing.dagbag import DagBag\n"
            f"bag = DagBag({str(ROOT / 'dags' / 'proof_batch.py')!r})\n"
            "d = bag.get_dag('proof_batch'); print(getattr(d.timetable, 'expression', None))\n"
            "print(sorted(t.task_id for t in d.tasks))\n")
    env = {**os.environ, "PROOFFLOW_BATCH_CRON": cron}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.splitlines()[-2] == schedule and "trigger_proof_run" in out.stdout


@pytest.mark.slow
def test_failed_run_is_cleaned_up_and_marked_failed(proof_run_dag, monkeypatch, tmp_path):
    """A partition that keeps failing: the run fails, the cleanup teardown still removes the
    scratch directory, and the timing store marks the run failed (with the failed attempt's rows)."""
    from proofflow.prover import layout
    from proofflow.airflow.operators import proof as ops
    from proofflow.timing import TimingStore
    url = f"sqlite:///{tmp_path / 'timing.db'}"
    monkeypatch.setenv("PROOFFLOW_DB_URL", url)
    original = ops.StageOperator.run_partition

    def flaky(self, context, rec, partition, item, first):
        if partition == 1:
            raise OSError("disk on fire (injected)")
        return original(self, context, rec, partition, item, first)
    monkeypatch.setattr(ops.StageOperator, "run_partition", flaky)
    from proofflow.airflow.notifications.run_state import RunStateNotifier
    notified, notify = [], RunStateNotifier.notify
    monkeypatch.setattr(RunStateNotifier, "notify", lambda self, ctx: notified.append(ctx["run_id"]) or notify(self, ctx))
    dr = proof_run_dag.test(run_conf={"log2": 10, "partitions": 2, "backend": "cpu"})
    assert str(getattr(dr.state, "value", dr.state)) == "failed"
    assert notified == [dr.run_id], "the DAG's failure callback ran (dag.test hands it the serialized DAG)"
    states = {(ti.task_id, ti.map_index): str(getattr(ti.state, "value", ti.state)) for ti in dr.get_task_instances()}
    assert states[("partition.stage", 1)] == "failed"
    assert states[("finalize_run", -1)] == "upstream_failed"
    assert states[("cleanup_scratch", -1)] == "success"
    assert not layout.run_dir("proof_run", dr.run_id).exists()
    store = TimingStore(url)
    assert store.run("proof_run", dr.run_id)["state"] == "failed"
    # the summary still comes, after the cleanup recorded the failure, and fails nothing
    from proofflow.timing.summary import run_figures
    assert states[("publish_summary", -1)] == "success"
    fig = run_figures(store, "proof_run", dr.run_id)
    assert (fig["state"], fig["proofs_verified"]) == ("failed", 0)
    failed_rows = [r for r in store.timings("proof_run", dr.run_id, "partition.stage") if r["map_index"] == 1]
    assert {r["phase"] for r in failed_rows} == {"task"}, "a failed attempt still records its task row"


@pytest.mark.slow
def test_two_simulated_devices_share_the_partitions(proof_run_dag, monkeypatch, tmp_path):
    """PROOFFLOW_GPU_DEVICES=0,1 on the CPU backend: two prover services (simulated devices
    cpu and cpu:1), partitions spread over both (ties go round-robin from the partition),
    and the per-device steady state from the timing rows."""
    from proofflow.timing import TimingStore
    from proofflow.prover.service.client import stop_all
    url = f"sqlite:///{tmp_path / 'timing.db'}"
    monkeypatch.setenv("PROOFFLOW_DB_URL", url)
    monkeypatch.setenv("PROOFFLOW_RUNTIME", str(tmp_path / "rt"))
    monkeypatch.setenv("PROOFFLOW_GPU_DEVICES", "0,1")
    try:
        dr = proof_run_dag.test(run_conf={"log2": 8, "partitions": 4, "backend": "cpu"})
    finally:
        stopped = stop_all(tmp_path / "rt")
    assert stopped == 2, "one service per device"
    store = TimingStore(url)
    assert store.run(DAG_ID, dr.run_id)["proofs_verified"] == 4
    rows = store.timings(DAG_ID, dr.run_id, "partition.prove_gpu")
    by_device = {}
    for r in rows:
        if r["phase"] in ("h2d", "ntt", "msm"):
            by_device.setdefault(r["device"], {}).setdefault(r["map_index"], []).append(r)
    assert set(by_device) == {"cpu", "cpu:1"}
    per = {r["device"]: r for r in store.query("SELECT * FROM steady_state_devices WHERE run_id = :r",
                                                  {"r": dr.run_id})}
    assert set(per) <= {"cpu", "cpu:1"} and sum(p["partitions"] for p in per.values()) == 3  # one warm-up
