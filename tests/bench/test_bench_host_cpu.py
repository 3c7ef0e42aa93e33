"""bench.host_cpu's accounting: processes by category, CPU growth between snapshots."""
import os
import subprocess
import sys

import pytest

from bench import host_cpu


@pytest.mark.parametrize("cmdline, expected", [
    ("airflow worker -- LocalExecutor: <idle>", "tasks"),
    ("airflow worker -- 01a244fb-acdf-7b9b-b9c3-643d1c232ca3", "tasks"),
    ("airflow api_server -- host:127.0.0.1 port:50429", "api-server"),
    ("/venv/bin/python3.11 /venv/bin/airflow scheduler", "scheduler"),
    ("/venv/bin/python3.11 /venv/bin/airflow dag-processor", "dag-processor"),
    ("python -m proofflow.prover.service --socket /tmp/x.sock --backend cpu", "prover service"),
    ("airflow serve-logs", "other"),
])
def test_category(cmdline, expected):
    assert host_cpu.category(cmdline) == expected


def test_growth_counts_new_processes_from_zero_and_reaped_children():
    before = {"1:100": {"category": "tasks", "own_s": 2.0, "reaped_s": 10.0},
              "2:100": {"category": "scheduler", "own_s": 5.0, "reaped_s": 0.0},
              "3:100": {"category": "other", "own_s": 1.0, "reaped_s": 0.0}}  # gone by the second
    after = {"1:100": {"category": "tasks", "own_s": 2.5, "reaped_s": 14.0},
             "2:100": {"category": "scheduler", "own_s": 6.0, "reaped_s": 0.0},
             "4:200": {"category": "tasks", "own_s": 0.25, "reaped_s": 0.0},  # born in between
             "5:200": {"category": "api-server", "own_s": 3.0, "reaped_s": 0.0}}
    assert host_cpu.cpu_by_category(before, after) == {"tasks": 4.75, "api-server": 3.0, "scheduler": 1.0}


def test_snapshot_finds_the_deployment_and_counts_reaped_cpu(tmp_path):
    """A process whose environment names the runtime is found, and so is one of a service's
    session; the CPU of a child it waited for shows as its reaped time."""
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3:\n    pass\n"
    code = (f"import subprocess, sys, time\nsubprocess.run([sys.executable, '-c', {burn!r}])\n"
            "print('ready', flush=True)\ntime.sleep(30)\n")
    env = {**os.environ, "PROOFFLOW_RUNTIME": str(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        snap = host_cpu.snapshot(set(), tmp_path)
        (entry,) = [v for k, v in snap.items() if k.startswith(f"{proc.pid}:")]
        assert entry["category"] == "other" and entry["reaped_s"] >= 0.25
        assert not host_cpu.snapshot(set(), tmp_path / "another")
        assert f"{proc.pid}:" in "".join(host_cpu.snapshot({os.getsid(proc.pid)}, tmp_path / "another"))
    finally:
        proc.kill()
        proc.wait()


def test_api_requests_by_route_within_the_window(tmp_path):
    log = tmp_path / "api-server.log"
    line = ("{t} [info     ] request finished               [http.access] client_addr=127.0.0.1:1 "
            "duration_us={us} loc=http_access_log.py:130 method={m} path={p} query= status_code=200")
    log.write_text("\n".join([
        line.format(t="2026-12-05T07:29:58.000000Z", us=1000, m="PATCH",
                    p="/execution/task-instances/01a244f8-f606-713d-a81e-e5b52ebaa3a9/run"),
        line.format(t="2026-12-05T07:29:59.000000Z", us=3000, m="PATCH",
                    p="/execution/task-instances/01a244fb-acdf-7b9b-b9c3-643d1c232ca3/run"),
        line.format(t="2026-12-05T07:29:59.500000Z", us=500, m="GET",
                    p="/execution/xcoms/proof_run/manual__2026-12-05T07:29:58.140235+00:00/partition.synthesize/return_value"),
        "2026-12-05T07:29:59.600000Z [info     ] something else",
        line.format(t="2026-12-05T07:31:00.000000Z", us=9000, m="GET", p="/api/v2/dags/proof_run/dagRuns/x"),  # after
    ]))
    t0 = host_cpu.dt.datetime(2026, 12, 5, 7, 29, 57, tzinfo=host_cpu.dt.timezone.utc).timestamp()
    got = host_cpu.api_requests(log, t0, t0 + 10)
    assert got == {"PATCH /execution/task-instances/ID/run": {"n": 2, "latency_s": pytest.approx(0.004)},
                   "GET /execution/xcoms/...": {"n": 1, "latency_s": pytest.approx(0.0005)}}
    assert host_cpu.api_requests(tmp_path / "none.log", t0, t0 + 10) == {}


def test_an_uncategorized_process_takes_its_nearest_categorized_ancestors_category():
    """The API server's spawned workers do not name it on their command line."""
    procs = {"10:1": {"category": "api-server", "pid": 10, "ppid": 1, "own_s": 1.0, "reaped_s": 0.0},
             "11:2": {"category": "other", "pid": 11, "ppid": 10, "own_s": 1.0, "reaped_s": 0.0},
             "12:3": {"category": "other", "pid": 12, "ppid": 11, "own_s": 1.0, "reaped_s": 0.0},
             "20:4": {"category": "other", "pid": 20, "ppid": 1, "own_s": 1.0, "reaped_s": 0.0},
             "30:5": {"category": "tasks", "pid": 30, "ppid": 10, "own_s": 1.0, "reaped_s": 0.0}}
    got = {k: p["category"] for k, p in host_cpu.inherit_categories(procs).items()}
    assert got == {"10:1": "api-server", "11:2": "api-server", "12:3": "api-server", "20:4": "other", "30:5": "tasks"}
