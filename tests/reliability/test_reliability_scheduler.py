"""A real Airflow (api-server, scheduler with LocalExecutor, dag-processor) with the simple
auth manager checking real users, its timing store on a Postgres of the test's own, named by
the Airflow connection proofflow_timing with a password:

* the REST trigger path requires authentication (401 without a token, 403 for a viewer);
* bad params through the REST trigger are refused or fail in validate, naming the problem;
* a soak of small runs, with SIGKILLs at fault points of tasks and of the prover service,
  an out-of-memory error on the device, and the timing database stopped and restarted
  mid-soak: every run succeeds, every proof verifies, no row is missing or duplicated, RSS
  and staging usage stay flat (figures printed; ``--soak``: 200 runs);
* no secret (the database password, the API token) in task logs, XCom, rendered fields or
  the files the runs leave.
"""
from __future__ import annotations

import json
import os
import secrets
import statistics
import time
from collections import Counter
from pathlib import Path

import pytest

import reliability_figures as figures
import local_stack
from proof_tasks import OPTIONAL_PHASES, PHASES
from proofflow import settings

pytestmark = [pytest.mark.reliability, pytest.mark.slow]

WAVE = 4  # runs triggered together (proof_run's max_active_runs)
# Each fires once, under the real scheduler (proofflow/prover/faults.py).
FAULTS = ["kill:synthesize.segment", "kill:task.stage.register", "kill:client.sent", "kill:service.device",
          "oom:service.device", "kill:task.finalize_partition.flushed", "kill:task.finalize_run.verify"]


class _Stack:
    """One native deployment (tests/helpers/local_stack.py) with a logged-in user: the services
    started in two steps, since the scheduler's environment holds a token only the running
    API server can issue."""

    def __init__(self, home: Path, extra: dict, metadata_url: str, users: dict):
        self.home, self.port = Path(home), local_stack.free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.env = local_stack.airflow_env(self.home, metadata_url, self.port, **local_stack.users_env(self.home, users),
                                           **extra)
        self.procs = local_stack.Processes(self.home)
        self.token: str | None = None

    def setup(self, gpu_slots: int, extra_env: dict) -> None:
        local_stack.proofflow_setup({**self.env, **extra_env}, gpu_slots)

    def start_api(self) -> None:
        self.procs.start("api-server", self.env)
        self.wait("the api server", lambda: self.api("/api/v2/monitor/health"), 180)

    def start_workers(self, extra_env: dict) -> None:
        for name in ("scheduler", "dag-processor"):
            self.procs.start(name, {**self.env, **extra_env})
        self.wait("proof_run to be parsed", lambda: self.api("/api/v2/dags/proof_run")["is_paused"] is False, 240, 2)

    def request(self, path: str, body=None, token: str | None = None):
        return local_stack.request(self.base, path, body, token=self.token if token is None else token)

    def api(self, path: str, body=None):
        return local_stack.api(self.base, path, body, token=self.token)

    def login(self, user: str, password: str) -> str:
        self.token = local_stack.token(self.base, user, password)
        return self.token

    def wait(self, what: str, fn, timeout: float, every: float = 1.0):
        return local_stack.wait(what, fn, timeout, every, procs=self.procs)

    def rss(self) -> dict[str, int]:
        return self.procs.rss()

    def stop(self) -> None:
        self.procs.stop()


@pytest.fixture(scope="module")
def stack(tmp_path_factory, isolated_pg, pg_new_database_module):
    from proofflow.prover.service.client import stop_all
    root = tmp_path_factory.mktemp("sched")
    markers = root / "markers"
    markers.mkdir()
    users = {"operator": ("admin", secrets.token_urlsafe(12)), "watcher": ("viewer", secrets.token_urlsafe(12))}
    timing_url = isolated_pg.new_database("timing_scheduler")
    runtime = root / "rt"
    env = {
        "PROOFFLOW_HOME": str(root / "proofflow"),
        "PROOFFLOW_RUNTIME": str(runtime),
        "PROOFFLOW_SHARED_STAGING": str(root / "shm"),
        "PROOFFLOW_RETRIES": "4",  # a prove_gpu try may meet three faults in a row
        "PROOFFLOW_SERVICE_IDLE_S": "900",
        "PROOFFLOW_FAULT": ",".join(f"{spec}:{markers / str(i)}" for i, spec in enumerate(FAULTS)),
        # the H2D check is not under test here: a loaded 2-core machine must not flag a run
        "PROOFFLOW_H2D_TOL": "1000", "PROOFFLOW_H2D_SLACK_MS": "1000", "PROOFFLOW_H2D_FLOOR_GBPS": "0",
    }
    s = _Stack(root / "airflow", env, pg_new_database_module("airflow"), users)
    # the timing store's URL (its password) reaches proofflow setup alone, which puts it into
    # the connection; the scheduler and the tasks never see it in their environment
    s.setup(gpu_slots=3, extra_env={"PROOFFLOW_DB_URL": timing_url})
    try:
        s.start_api()
        token = s.login("operator", users["operator"][1])
        s.start_workers(local_stack.api_connection_env(s.base, "operator", users["operator"][1]))
        yield {"stack": s, "users": users, "timing_url": timing_url, "markers": markers, "root": root,
               "runtime": runtime, "pg": isolated_pg, "secrets": [isolated_pg.password, token, users["operator"][1]]}
    finally:
        s.stop()
        stop_all(runtime)


def _trigger(s: _Stack, conf: dict, token=None, run_id=None):
    body = {"logical_date": None, "conf": conf}
    if run_id:
        body["dag_run_id"] = run_id
    return s.request("/api/v2/dags/proof_run/dagRuns", body, token=token)


def _wait_runs(s: _Stack, run_ids: list[str], timeout: float) -> dict:
    states = {}

    def done():
        for rid in run_ids:
            if rid not in states:
                st = s.api(f"/api/v2/dags/proof_run/dagRuns/{rid}")["state"]
                if st in ("success", "failed"):
                    states[rid] = st
        return len(states) == len(run_ids)
    s.wait(f"runs {run_ids}", done, timeout, 2)
    return states


def test_rest_trigger_requires_authentication(stack):
    s, users = stack["stack"], stack["users"]
    conf = {"log2": 8, "partitions": 1, "backend": "cpu"}
    status, _ = _trigger(s, conf, token="")
    assert status == 401, "an unauthenticated trigger must be refused"
    status, _ = _trigger(s, conf, token="not-a-token")
    assert status in (401, 403)  # Airflow answers 403 to a token it cannot decode
    viewer = s.request("/auth/token", {"username": "watcher", "password": users["watcher"][1]}, token="")[1]
    status, _ = _trigger(s, conf, token=viewer["access_token"])
    assert status == 403, "a viewer must not trigger runs"
    status, _ = s.request("/auth/token", {"username": "operator", "password": "wrong"}, token="")
    assert status == 401
    status, run = _trigger(s, conf)  # the operator's token
    assert status == 200, run
    assert _wait_runs(s, [run["dag_run_id"]], 600)[run["dag_run_id"]] == "success"
    runs = s.api("/api/v2/dags/proof_run/dagRuns?limit=100")["dag_runs"]
    assert [r["dag_run_id"] for r in runs] == [run["dag_run_id"]], "a refused trigger created a run"
    figures.add("REST triggers checked for authentication (401/403 refused, token accepted)", 5)


REST_CASES = {  # conf -> (HTTP status, text of the error) for triggers the params' schema refuses
    "partitions 0": ({"partitions": 0}, 400, "partitions"),
    "partitions a string": ({"partitions": "4"}, 400, "partitions"),
    "log2 too small": ({"log2": 7}, 400, "log2"),
    "backend unknown": ({"backend": "tpu"}, 400, "backend"),
    "seed negative": ({"seed": -1}, 400, "seed"),
    "seed beyond 64 bits": ({"seed": 1 << 63}, 400, "seed"),
    "staging null": ({"staging": None}, 400, "staging"),
    "conf not an object": ([1, 2], 422, "conf"),
}


def test_rest_trigger_refuses_bad_params(stack):
    from proofflow.prover import files, layout
    from proofflow.timing import TimingStore
    s = stack["stack"]
    before = {r["dag_run_id"] for r in s.api("/api/v2/dags/proof_run/dagRuns?limit=100")["dag_runs"]}
    for case, (conf, code, what) in REST_CASES.items():
        status, doc = _trigger(s, conf)
        assert status == code, (case, status, doc)
        assert what in json.dumps(doc), (case, doc)
        figures.add("bad inputs tried")
        figures.add("bad inputs tried: REST trigger")
    # a misspelt parameter passes the schema (Airflow keeps extra conf keys) and fails in validate
    status, run = _trigger(s, {"log2": 8, "partitons": 3, "backend": "cpu"})
    assert status == 200
    rid = run["dag_run_id"]
    assert _wait_runs(s, [rid], 300)[rid] == "failed"
    tis = {t["task_id"]: t for t in s.api(f"/api/v2/dags/proof_run/dagRuns/{rid}/taskInstances")["task_instances"]}
    assert tis["validate"]["state"] == "failed" and tis["setup"]["state"] == "upstream_failed"
    log = s.api(f"/api/v2/dags/proof_run/dagRuns/{rid}/taskInstances/validate/logs/1?full_content=true")
    assert "unknown parameter(s) 'partitons'" in json.dumps(log)
    assert not layout.run_dir("proof_run", rid, stack["root"] / "proofflow" / "scratch").exists()
    bundles = stack["root"] / "proofflow" / "bundles"
    assert not (bundles / files.safe_name("proof_run") / files.safe_name(rid)).exists()
    assert {r["task_id"] for r in TimingStore(stack["timing_url"]).timings("proof_run", rid)} <= {"validate",
                                                                                                    "cleanup_scratch"}
    after = {r["dag_run_id"] for r in s.api("/api/v2/dags/proof_run/dagRuns?limit=100")["dag_runs"]}
    assert after - before == {rid}, "a refused trigger created a run"
    figures.add("bad inputs tried")
    figures.add("bad inputs tried: REST trigger")


def _samples(s, client):
    from proofflow.prover.staging.shared import SharedStaging
    st = client.status()
    staging = SharedStaging(s.env["PROOFFLOW_SHARED_STAGING"], 1).stats()
    return {"rss": s.rss(), "service_rss": st["rss_bytes"], "service_pid": st["pid"],
            "leases": staging["leases"], "leased": staging["leased"]}


def _check_rows(store, run_id: str, tis: list[dict]):
    rows = store.timings("proof_run", run_id)
    assert max(Counter((r["task_id"], r["map_index"], r["try_number"], r["phase"]) for r in rows).values()) == 1
    tries: dict = {}
    for r in rows:
        tries.setdefault((r["task_id"], r["map_index"], r["try_number"]), set()).add(r["phase"])
    for ti in tis:
        if ti["task_id"] not in PHASES:
            continue
        key = (ti["task_id"], ti["map_index"], ti["try_number"])
        need = PHASES[ti["task_id"]]
        assert need <= tries.get(key, set()) <= need | OPTIONAL_PHASES.get(ti["task_id"], set()) | {"queue_wait"}, \
            (key, tries.get(key))
    for key, phases in tries.items():
        assert "task" in phases, (key, phases)  # every try wrote all its rows, or none


def test_soak_with_kills_and_a_timing_database_outage(stack, soak):
    from proofflow.prover import files
    from proofflow.timing import TimingStore
    from proofflow.prover.bundle import verify_bundle
    from proofflow.prover.service.client import ServiceClient
    s, pg = stack["stack"], stack["pg"]
    runs = 200 if soak else 12  # 3 waves: every fault in the first, the outage in the third
    os.environ["PROOFFLOW_RUNTIME"] = str(stack["runtime"])
    settings.reload()
    client = ServiceClient("cpu", 0)
    store = TimingStore(stack["timing_url"])
    samples, done, outages, parts, fired = [], [], 0, {}, 0
    t0 = time.time()
    try:
        for wave in range(-(-runs // WAVE)):
            ids = []
            for i in range(wave * WAVE, min(runs, (wave + 1) * WAVE)):
                status, run = _trigger(s, {"log2": 8, "partitions": 1 + i % 2, "backend": "cpu", "seed": i % 3})
                assert status == 200, run
                ids.append(run["dag_run_id"])
                parts[run["dag_run_id"]] = 1 + i % 2
            if wave % 10 == 2:  # the timing database goes away while this wave's tasks write their rows
                time.sleep(4)
                pg.stop()
                time.sleep(3)
                pg.start()
                outages += 1
            states = _wait_runs(s, ids, 900)
            for rid in ids:
                tis = s.api(f"/api/v2/dags/proof_run/dagRuns/{rid}/taskInstances?limit=100")["task_instances"]
                assert states[rid] == "success", json.dumps([(t["task_id"], t["map_index"], t["state"], t["try_number"])
                                                             for t in tis if t["state"] != "success"])
                n = parts[rid]
                record = store.run("proof_run", rid)
                assert record["state"] == "success" and record["proofs_verified"] == n
                results = verify_bundle(record["bundle_dir"])
                figures.count_proofs(n, results)
                assert sorted(r.partition for r in results) == list(range(n)) and all(r.ok for r in results)
                assert len(list(Path(record["bundle_dir"]).glob("*.proof"))) == n
                assert files.stale_temporaries(Path(record["bundle_dir"])) == []
                _check_rows(store, rid, tis)
                done.append(rid)
            samples.append(_samples(s, client))
            markers = list(stack["markers"].iterdir())
            if soak or wave == 0:  # every fault fires in the first wave; the long soak re-arms them each wave
                assert len(markers) == len(FAULTS), f"faults not injected in wave {wave}: {markers}"
            if soak:
                fired += len(markers)
                for m in markers:
                    m.unlink()
    finally:
        os.environ.pop("PROOFFLOW_RUNTIME", None)
        settings.reload()
    wall = time.time() - t0
    assert not any((stack["root"] / "proofflow" / "scratch").rglob("*")), "scratch left behind"
    params = stack["root"] / "proofflow" / "params"
    assert [p for p in params.glob(".*") if p.is_dir()] == [], "a killed setup's temporary key directory"
    fired = fired or len(list(stack["markers"].iterdir()))
    assert all(x["leases"] == 0 and x["leased"] == 0 for x in samples), "a shared segment was left leased"
    logs = stack["stack"].home / "logs"
    waited = [p for p in logs.rglob("*.log") if b"retrying in" in p.read_bytes()]
    assert waited, "no task met the timing database's outage: it tested nothing"
    # steady: after the first wave (imports, caches, the first key), compare the first and last thirds
    steady = samples[1:]
    third = max(1, len(steady) // 3)
    comp = {name: (statistics.mean(x["rss"][name] for x in steady[:third]),
                   statistics.mean(x["rss"][name] for x in steady[-third:])) for name in samples[0]["rss"]}
    last_pid = samples[-1]["service_pid"]
    service = [x["service_rss"] for x in steady if x["service_pid"] == last_pid] or [samples[-1]["service_rss"]]
    mib = 2 ** 20
    print(f"soak: {len(done)} runs through the real scheduler in {wall:.0f} s, {fired} faults injected, "
          f"{outages} timing-database outages of 3 s ({len(waited)} task attempts waited them out); "
          "RSS MiB first -> last third: "
          + ", ".join(f"{k} {a / mib:.0f} -> {b / mib:.0f}" for k, (a, b) in comp.items())
          + f"; prover service {service[0] / mib:.0f} -> {service[-1] / mib:.0f}; staging in use 0 after every wave")
    figures.add("runs completed: real scheduler soak", len(done))
    figures.add("faults injected: under the real scheduler (kills, oom)", fired)
    figures.add("faults injected: timing database stopped and restarted (real scheduler)", outages)
    figures.put("soak: RSS MiB first/last third (scheduler, api-server, dag-processor)",
                {k: [round(a / mib), round(b / mib)] for k, (a, b) in comp.items()})
    figures.put("soak: prover service RSS MiB first/last", [round(service[0] / mib), round(service[-1] / mib)])
    figures.put("soak: shared segments leased after every wave", 0)
    figures.put("soak: wall seconds", round(wall))
    for name, (a, b) in comp.items():
        assert b <= a * 1.25 + 64 * mib, f"{name} RSS grew from {a / mib:.0f} to {b / mib:.0f} MiB over the soak"
    assert service[-1] <= service[0] * 1.25 + 64 * mib


def test_no_secret_in_logs_xcom_or_files(stack):
    """After the runs above: the timing database's password (in the Airflow connection only)
    and the API token (in the workers' environment only) appear nowhere they could leak."""
    import psycopg2
    from sqlalchemy.engine import make_url
    s = stack["stack"]
    found = []
    files = [p for p in stack["root"].rglob("*") if p.is_file() and p.name != "simple_auth_manager_passwords.json"]
    logs = [p for p in files if "/logs/" in str(p)]
    assert logs, "no task logs to check"
    for p in files:
        data = p.read_bytes()
        found += [(str(p), i) for i, secret in enumerate(stack["secrets"]) if secret.encode() in data]
    u = make_url(s.env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"])
    conn = psycopg2.connect(host=u.host, port=u.port, user=u.username, dbname=u.database)
    with conn, conn.cursor() as cur:
        values = []
        for table, col in (("xcom", "value"), ("rendered_task_instance_fields", "rendered_fields"),
                           ("dag_run", "conf"), ("log", "extra")):
            cur.execute(f"SELECT {col}::text FROM {table}")  # the table and column names come from this list
            values += [(table, v) for (v,) in cur.fetchall() if v]
        cur.execute("SELECT count(*) FROM xcom")
        assert cur.fetchone()[0] > 0
    conn.close()
    found += [(table, i) for table, v in values for i, secret in enumerate(stack["secrets"]) if secret in v]
    assert found == [], f"secrets found in: {found}"
    conn_doc = s.api("/api/v2/connections/proofflow_timing")  # as the UI shows it
    assert conn_doc["conn_type"] == "postgres" and conn_doc["login"] == "proofflow"
    assert stack["pg"].password not in json.dumps(conn_doc), "the connection shows its password"
    print(f"secrets: {len(stack['secrets'])} secrets searched in {len(files)} files ({len(logs)} logs) and "
          f"{len(values)} XCom/rendered/conf values: none found")
    figures.put("secrets searched in task logs, files and XCom: files, values, found",
                [len(files), len(values), 0])
