"""A real Airflow (api-server, scheduler with LocalExecutor, dag-processor) in a home of its
own, for the pipeline benchmark: start it, trigger proof_run through the REST API as the UI
does, wait, stop it. The metadata DB is SQLite in the home (what the GPU machine has) unless
a SQLAlchemy URL is given.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _airflow_bin() -> list[str]:
    exe = BIN / "airflow"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "airflow"]


class AirflowStack:
    def __init__(self, home: Path, extra_env: dict, metadata_url: str | None = None, parallelism: int = 8):
        self.home = Path(home)
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.procs: dict[str, subprocess.Popen] = {}
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "PROOFFLOW_"))}
        env.update({
            "PATH": f"{BIN}:{env.get('PATH', '')}",
            "AIRFLOW_HOME": str(self.home),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": metadata_url or f"sqlite:///{self.home / 'airflow.db'}",
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__PARALLELISM": str(parallelism),
            "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "dags"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{self.base}/execution/",
            "AIRFLOW__API__HOST": "127.0.0.1",
            "AIRFLOW__API__PORT": str(self.port),
            "AIRFLOW__API__WORKERS": "1",
            "AIRFLOW__API_AUTH__JWT_SECRET": "proofflow-bench-jwt-secret",
            "AIRFLOW__API__SECRET_KEY": "proofflow-bench-secret-key",
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
            "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "1",
            # a task's supervisor notices its task has exited at its next heartbeat check: at
            # the default 5 s each finished task holds an executor slot that much longer
            "AIRFLOW__WORKERS__MIN_HEARTBEAT_INTERVAL": "1",
            "PYTHONPATH": f"{ROOT}:{env.get('PYTHONPATH', '')}".rstrip(":"),
        })
        env.update(extra_env)
        self.env = env

    def run(self, *args: str, timeout: float = 600) -> str:
        out = subprocess.run(list(args), env=self.env, capture_output=True, text=True, timeout=timeout)
        if out.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed ({out.returncode}): {out.stderr[-3000:]}")
        return out.stdout

    def setup(self, gpu_slots: int) -> None:
        """`airflow db migrate`, pool gpu, the timing connection: the project's own setup."""
        self.home.mkdir(parents=True, exist_ok=True)
        self.run(sys.executable, "-m", "operators.cli", "setup", "--gpu-slots", str(gpu_slots))

    def start(self) -> None:
        for name, args in {"api-server": ["api-server", "--port", str(self.port)], "scheduler": ["scheduler"],
                           "dag-processor": ["dag-processor"]}.items():
            log = open(self.home / f"{name}.log", "wb")
            self.procs[name] = subprocess.Popen(_airflow_bin() + args, env=self.env, stdout=log,
                                                stderr=subprocess.STDOUT, start_new_session=True)
            log.close()
        self.wait("the api server", lambda: self.api("/api/v2/monitor/health"), 180)
        self.wait("proof_run to be parsed", lambda: self.api("/api/v2/dags/proof_run")["is_paused"] is False, 240, 2)

    def api(self, path: str, body=None, timeout: float = 10):
        req = urllib.request.Request(self.base + path, method="POST" if body is not None else "GET",
                                     data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return json.loads(r.read() or b"null")

    def wait(self, what: str, fn, timeout: float, every: float = 1.0):
        deadline, last = time.time() + timeout, None
        while time.time() < deadline:
            for name, p in self.procs.items():
                if p.poll() is not None:
                    raise RuntimeError(f"airflow {name} exited ({p.returncode}); see {self.home / (name + '.log')}")
            try:
                v = fn()
                if v:
                    return v
            except (urllib.error.URLError, ConnectionError, OSError, ValueError) as exc:
                last = exc
            time.sleep(every)
        raise TimeoutError(f"timed out waiting for {what} ({last})")

    def trigger_and_wait(self, conf: dict, timeout: float) -> tuple[str, str, list]:
        run = self.api("/api/v2/dags/proof_run/dagRuns", {"logical_date": None, "conf": conf})
        run_id = run["dag_run_id"]

        def finished():
            state = self.api(f"/api/v2/dags/proof_run/dagRuns/{run_id}")["state"]
            return state if state in ("success", "failed") else None
        state = self.wait(f"run {run_id}", finished, timeout, 2)
        tis = self.api(f"/api/v2/dags/proof_run/dagRuns/{run_id}/taskInstances?limit=200")["task_instances"]
        return run_id, state, tis

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

    def remove(self) -> None:
        shutil.rmtree(self.home, ignore_errors=True)
