"""The deployment's topology run natively (no Docker engine): api-server, scheduler and
dag-processor with the CeleryExecutor, a CPU worker (queue cpu), a GPU worker (queue gpu) and
the GPU host's staging receiver, each started with its command from
tests/helpers/topology.py (the table docker-compose.yml is checked against), on a fresh
Postgres metadata DB and timing DB and the local Redis as broker. The two workers stand for
two hosts: each has its own shared staging, and the CPU worker's syntheses stream into the
GPU host's through the receiver.

A 6-partition proof_run triggered through the REST API: every stage and prove_gpu runs on
the GPU worker and every other task on the CPU worker (Airflow's record and the timing rows
agree), every partition crossed the network once and no file, nothing was left in either
host's staging, no two prove_gpu attempts overlap (pool gpu with one slot), and every proof
verifies."""
import json
import os
import random
import shutil
import tempfile
import uuid
from collections import Counter
from pathlib import Path

import pytest

from local_stack import Processes, airflow_env, api, api_connection_env, free_port, run, run_service, wait

PARTITIONS = 6  # above the CPU worker's 4 syntheses at once: several prove_gpu wait on the one slot
REDIS_URL = os.environ.get("PROOFFLOW_TEST_REDIS", "redis://127.0.0.1:6379")
WORKERS = {"worker-cpu": "cpu", "worker-gpu": "gpu"}  # service -> the queue it serves
GPU_TASKS = {"partition.stage", "partition.prove_gpu"}


@pytest.fixture
def redis_broker():
    """A broker URL on the local Redis that no parallel run shares: an empty database number
    and a key prefix of its own; the prefixed keys are deleted afterwards."""
    redis = pytest.importorskip("redis")
    try:
        admin = redis.Redis.from_url(REDIS_URL, socket_timeout=3)
        databases = int(admin.config_get("databases")["databases"])
    except Exception as exc:
        pytest.skip(f"local Redis not reachable at {REDIS_URL}: {exc}")
    free = [n for n in range(1, databases) if not redis.Redis.from_url(f"{REDIS_URL}/{n}").dbsize()]
    if not free:
        pytest.skip("no empty Redis database for the broker")
    db = random.choice(free)
    prefix = f"proofflow-test-{uuid.uuid4().hex[:12]}:"
    yield f"{REDIS_URL}/{db}", prefix
    client = redis.Redis.from_url(f"{REDIS_URL}/{db}")
    keys = list(client.scan_iter(match=f"{prefix}*"))
    if keys:
        client.delete(*keys)
    assert not list(client.scan_iter(match=f"{prefix}*"))


@pytest.mark.slow
def test_celery_topology_routes_prove_gpu_to_the_gpu_worker(tmp_path, pg_new_database, redis_broker):
    meta_url, timing_url = pg_new_database("airflow"), pg_new_database("timing")
    broker_url, key_prefix = redis_broker
    port = free_port()
    # the prover service's socket lives here: a short path (Unix socket names are short)
    runtime = Path(tempfile.mkdtemp(prefix="pf-run-", dir="/tmp"))
    env = airflow_env(tmp_path / "airflow", meta_url, port, "CeleryExecutor")
    env.update({
        "AIRFLOW__CELERY__BROKER_URL": broker_url,
        "AIRFLOW__CELERY_BROKER_TRANSPORT_OPTIONS__GLOBAL_KEYPREFIX": key_prefix,
        "AIRFLOW__CELERY__RESULT_BACKEND": f"db+{meta_url}",
        "PROOFFLOW_HOME": str(tmp_path / "proofflow"),  # shared by both workers, as the compose volume is
        "PROOFFLOW_RUNTIME": str(runtime),
        "PROOFFLOW_SERVICE_IDLE_S": "60",
        "PROOFFLOW_DB_URL": timing_url,
        **api_connection_env(f"http://127.0.0.1:{port}"),
        # the topology's sizing: pool gpu of one slot, the GPU worker's concurrency to match
        "PROOFFLOW_GPU_SLOTS": "1",
        "PROOFFLOW_GPU_WORKER_SLOTS": "1",
        "PROOFFLOW_CPU_WORKER_CONCURRENCY": "3",
        # the H2D check is not under test here: on 2 shared cores a preempted 24 KB copy can
        # outlast the default 2 ms slack
        "PROOFFLOW_H2D_SLACK_MS": "50",
    })

    receiver_port, token = free_port(), uuid.uuid4().hex
    hosts_env = {  # each "host" its own shared staging; the CPU host streams to the GPU host's receiver
        "worker-cpu": {"PROOFFLOW_SHARED_STAGING": str(tmp_path / "cpu-host-shm"),
                       "PROOFFLOW_STAGING_ENDPOINT": f"127.0.0.1:{receiver_port}", "PROOFFLOW_STAGING_TOKEN": token},
        "worker-gpu": {"PROOFFLOW_SHARED_STAGING": str(tmp_path / "gpu-host-shm")},
        "staging-receiver": {"PROOFFLOW_SHARED_STAGING": str(tmp_path / "gpu-host-shm"),
                             "PROOFFLOW_STAGING_PORT": str(receiver_port), "PROOFFLOW_STAGING_TOKEN": token},
    }

    def as_worker(service: str) -> dict:
        # A worker's identity (the host its tasks record) and its own log-server port: both
        # workers share this machine.
        return {**env, "AIRFLOW__CORE__HOSTNAME_CALLABLE": "proofflow.airflow.worker.hostname",
                "PROOFFLOW_WORKER_NAME": service, "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(free_port()),
                **hosts_env.get(service, {})}

    setup = run_service("airflow-init", env)  # proofflow setup: migrations, pool gpu, timing store
    assert json.loads(setup.stdout.strip().splitlines()[-1])["slots"] == 1
    # check_h2d compares each H2D with the calibration of the host it ran on: the GPU
    # worker's, measured there (a deployment calibrates every GPU worker once)
    calib = run(["proofflow", "calibrate", "--device", "cpu", "--min-log2", "8", "--max-log2", "8", "--reps", "3",
                 "--json"], as_worker("worker-gpu"))
    assert {r["host"] for r in json.loads(calib.stdout)} == {"worker-gpu"}

    from proofflow.prover.service.client import stop_all
    try:
        with Processes(tmp_path / "logs") as procs:
            # the triggerer is left out: proof_run defers nothing
            for name in ("api-server", "scheduler", "dag-processor"):
                procs.start(name, env)
            procs.start("staging-receiver", {**env, **hosts_env["staging-receiver"]})
            for name in WORKERS:
                procs.start(name, as_worker(name))
            base = f"http://127.0.0.1:{port}"
            wait("the api server", lambda: api(base, "/api/v2/monitor/health"), 120, procs=procs)
            wait("proof_run to be parsed", lambda: api(base, "/api/v2/dags/proof_run")["is_paused"] is False,
                 180, 2, procs=procs)
            conf = {"log2": 8, "partitions": PARTITIONS, "backend": "cpu", "staging": "pinned", "seed": 5}
            run_id = api(base, "/api/v2/dags/proof_run/dagRuns", {"logical_date": None, "conf": conf})["dag_run_id"]

            def finished():
                state = api(base, f"/api/v2/dags/proof_run/dagRuns/{run_id}")["state"]
                return state if state in ("success", "failed") else None
            state = wait("the run to finish", finished, 300, 2, procs=procs)
            tis = api(base, f"/api/v2/dags/proof_run/dagRuns/{run_id}/taskInstances?limit=200")["task_instances"]
            assert state == "success", json.dumps([(t["task_id"], t["map_index"], t["state"], t["hostname"])
                                                    for t in tis])
    finally:
        stop_all(runtime)
        shutil.rmtree(runtime, ignore_errors=True)

    # Airflow's own record: the queue each task was sent to and the worker that ran it.
    # validate, setup, prepare_scratch, finalize_run, check_h2d, cleanup_scratch, publish_summary
    assert len(tis) == 7 + 4 * PARTITIONS
    for t in tis:
        gpu = t["task_id"] in GPU_TASKS
        assert (t["queue"], t["hostname"], t["state"]) == (("gpu", "worker-gpu", "success") if gpu else
                                                           ("cpu", "worker-cpu", "success")), t
    assert sum(t["task_id"] == "partition.prove_gpu" for t in tis) == PARTITIONS

    from proofflow.timing import TimingStore
    from proofflow.prover.bundle import verify_bundle
    store = TimingStore(timing_url)
    record = store.run("proof_run", run_id)
    assert record["state"] == "success" and record["proofs_verified"] == PARTITIONS
    results = verify_bundle(record["bundle_dir"])
    assert len(results) == PARTITIONS and all(r.ok for r in results)

    # The timing rows tell the same: every row of a task carries the host of the worker that
    # ran it (check_h2d writes check results and publish_summary the run's note, no timing rows).
    rows = store.timings("proof_run", run_id)
    assert max(Counter((r["task_id"], r["map_index"], r["try_number"], r["phase"]) for r in rows).values()) == 1
    hosts = {}
    for r in rows:
        hosts.setdefault((r["task_id"], r["map_index"]), set()).add(r["host"])
    assert hosts == {(t["task_id"], t["map_index"]): {t["hostname"]} for t in tis
                     if t["task_id"] not in ("check_h2d", "publish_summary")}
    assert {r["device"] for r in rows if r["task_id"] == "partition.prove_gpu"} == {"cpu"}  # the CPU backend
    # Each partition crossed to the GPU host once, over the network (synthesize's net
    # transfer: a/b/c and witness), with no host copy there (stage's h2s: 0 bytes); neither
    # host's staging holds anything now.
    moved = Counter((t["task_id"], t["direction"], t["bytes"] == 0) for t in store.transfers("proof_run", run_id))
    assert moved[("partition.synthesize", "net", False)] == PARTITIONS
    assert moved[("partition.stage", "h2s", True)] == PARTITIONS
    from proofflow.prover.staging.shared import SharedStaging
    assert not list((tmp_path / "cpu-host-shm").glob("*.seg")), "the CPU host's staging was written"
    assert SharedStaging(tmp_path / "gpu-host-shm", 1).stats()["leases"] == 0
    tasks = [r for r in rows if r["phase"] == "task"]

    # Pool gpu holds one slot: no two prove_gpu attempts overlap.
    proves = sorted((r for r in tasks if r["task_id"] == "partition.prove_gpu"), key=lambda r: r["start"])
    assert len(proves) == PARTITIONS
    for a, b in zip(proves, proves[1:]):
        assert b["start"] >= a["end"], f"prove_gpu {a['map_index']} and {b['map_index']} overlap"
