"""A real Airflow run natively for the tests: its environment, its processes (the commands
of the deployment's topology, operators/topology.py), its REST API, and its shutdown."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from operators import topology

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def airflow_env(home: Path, meta_url: str, port: int, executor: str) -> dict:
    """The environment of every process of one test deployment: this interpreter's tools
    first on PATH, a home of its own, the metadata DB, the API server on ``port`` (the
    variable AIRFLOW_API_PORT is the topology's), nothing inherited from AIRFLOW_*/PROOFFLOW_*."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "PROOFFLOW_"))}
    env.update({
        "PATH": f"{BIN}:{env.get('PATH', '')}",
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": meta_url,
        "AIRFLOW__CORE__EXECUTOR": executor,
        "AIRFLOW__CORE__PARALLELISM": "4",
        "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "dags"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/",
        "AIRFLOW_API_PORT": str(port),
        "AIRFLOW__API__HOST": "127.0.0.1",
        "AIRFLOW__API__PORT": str(port),
        "AIRFLOW__API__WORKERS": "1",
        "AIRFLOW__API_AUTH__JWT_SECRET": "proofflow-test-jwt-secret",
        "AIRFLOW__API__SECRET_KEY": "proofflow-test-secret-key",
        "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
        "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "1",
    })
    return env


def api(base: str, path: str, body=None, timeout: float = 10):
    req = urllib.request.Request(base + path, method="POST" if body is not None else "GET",
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read() or b"null")


def wait(what: str, fn, timeout: float, every: float = 1.0, procs: "Processes | None" = None):
    """Poll ``fn`` until it returns something true; fails at once if one of ``procs`` died."""
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        if procs is not None:
            procs.check_alive()
        try:
            v = fn()
            if v:
                return v
        except (urllib.error.URLError, ConnectionError, OSError, ValueError) as exc:
            last = exc
        time.sleep(every)
    raise AssertionError(f"timed out waiting for {what} ({last})")


def overlap(a, b) -> bool:
    return a["start"] < b["end"] and b["start"] < a["end"]


def run(argv: list[str], env: dict, timeout: float = 300) -> subprocess.CompletedProcess:
    """A command of this deployment (its tools found on env's PATH), to successful completion."""
    argv = _resolve(argv, env)
    out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, f"{' '.join(argv)} exited {out.returncode}: {out.stderr[-3000:]}"
    return out


def run_service(service: str, env: dict, timeout: float = 300) -> subprocess.CompletedProcess:
    """A one-shot service of the topology (airflow-init), to successful completion."""
    return run(topology.command(service, env), env, timeout)


def _resolve(argv: list[str], env: dict) -> list[str]:
    exe = shutil.which(argv[0], path=env["PATH"])
    assert exe, f"{argv[0]} not found on {env['PATH']}"
    return [exe] + argv[1:]


class Processes:
    """Long-running services of the topology as subprocesses (each in its own session, its
    output in ``<logs>/<name>.log``); leaving the block stops them all (SIGTERM, then SIGKILL)."""

    def __init__(self, logs: Path):
        self.logs = Path(logs)
        self.procs: dict[str, subprocess.Popen] = {}

    def start(self, name: str, env: dict, service: str | None = None) -> None:
        """Start topology service ``service`` (default: ``name``) under ``name``."""
        self.logs.mkdir(parents=True, exist_ok=True)
        with open(self.logs / f"{name}.log", "wb") as log:
            self.procs[name] = subprocess.Popen(_resolve(topology.command(service or name, env), env), env=env, stdout=log,
                                                stderr=subprocess.STDOUT, start_new_session=True)

    def check_alive(self) -> None:
        for name, p in self.procs.items():
            if p.poll() is not None:
                tail = (self.logs / f"{name}.log").read_text(errors="replace")[-3000:]
                raise AssertionError(f"{name} exited with {p.returncode}:\n{tail}")

    def stop(self) -> None:
        for p in self.procs.values():
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in self.procs.values():
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        self.procs.clear()

    def __enter__(self) -> "Processes":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
