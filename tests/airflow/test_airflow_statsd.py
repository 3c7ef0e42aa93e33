"""Airflow's own metrics as docker-compose.yml configures them: a real scheduler, run with the
compose file's ``AIRFLOW__METRICS__*`` settings (its statsd-exporter address swapped for a UDP
socket of this test), sends StatsD datagrams of the scheduler's and the executor's metrics
with InfluxDB-style tags, the form statsd-exporter turns into Prometheus labels.

What is not run here: statsd-exporter itself (no Debian package, and no Go toolchain to build
it), so the datagrams' way from the exporter into Prometheus is the exporter's documented
mapping, not a tested one."""
import importlib.util
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(importlib.util.find_spec("statsd") is None,
                                reason="Airflow's StatsD client is not installed (the statsd extra; dev includes it)")


def _compose_metrics_env() -> dict:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    env = compose["services"]["scheduler"]["environment"]
    return {k: str(v) for k, v in env.items() if k.startswith("AIRFLOW__METRICS__")}


@pytest.mark.slow
def test_a_scheduler_sends_its_metrics_as_compose_configures_them(tmp_path):
    metrics = _compose_metrics_env()
    assert metrics["AIRFLOW__METRICS__STATSD_HOST"] == "statsd-exporter"
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("127.0.0.1", 0))
    receiver.settimeout(0.5)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "PROOFFLOW_"))}
    env.update(metrics)
    env.update({
        "AIRFLOW__METRICS__STATSD_HOST": "127.0.0.1", "AIRFLOW__METRICS__STATSD_PORT": str(receiver.getsockname()[1]),
        "AIRFLOW_HOME": str(tmp_path), "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{tmp_path / 'airflow.db'}",
        "AIRFLOW__CORE__EXECUTOR": "LocalExecutor", "AIRFLOW__CORE__PARALLELISM": "2",
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False", "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "dags"),
        "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": "0",
        # the scheduler heartbeats (scheduler_heartbeat) once its interval (5 s by default) has
        # passed: within the three loops below only when they are that slow
        "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "1",
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p),
    })
    airflow = [sys.executable, "-m", "airflow"]
    try:
        migrate = subprocess.run(airflow + ["db", "migrate"], env=env, capture_output=True, text=True, timeout=180)
        assert migrate.returncode == 0, migrate.stderr[-3000:]
        scheduler = subprocess.run(airflow + ["scheduler", "--num-runs", "3"], env=env, capture_output=True, text=True,
                                   timeout=180)
        assert scheduler.returncode == 0, scheduler.stderr[-3000:]
        datagrams = []
        while True:
            try:
                datagrams.append(receiver.recv(65535).decode())
            except socket.timeout:
                break
    finally:
        receiver.close()
    lines = {line for d in datagrams for line in d.splitlines()}
    prefix = metrics["AIRFLOW__METRICS__STATSD_PREFIX"] + "."
    assert lines and all(line.startswith(prefix) for line in lines), sorted(lines)[:5]
    assert f"{prefix}scheduler_heartbeat:1|c" in lines
    # tags InfluxDB-style (name,tag=value:value|type), which statsd-exporter makes labels
    assert f"{prefix}executor.open_slots,status=open,executor_class_name=LocalExecutor:2|g" in lines
    assert any(line.startswith(f"{prefix}scheduler.scheduler_loop_duration:") and line.endswith("|ms")
               for line in lines)
