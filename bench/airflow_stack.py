"""A real Airflow (api-server, scheduler with LocalExecutor, dag-processor) in a home of its
own, for the pipeline benchmark and the reliability tests: start it, trigger proof_run
through the REST API as the UI does, wait, stop it. The metadata DB is SQLite in the home
(what the GPU machine has) unless a SQLAlchemy URL is given.

Authentication: by default every request is admin (the simple auth manager's all-admins
mode, as a developer's Airflow). With ``users`` ({name: (role, password)}) the simple auth
manager checks them: ``login`` gets a token from ``/auth/token`` and later requests carry it.
"""
from __future__ import annotations

import json
import os
import secrets
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
    def __init__(self, home: Path, extra_env: dict, metadata_url: str | None = None, parallelism: int = 8,
                 users: dict[str, tuple[str, str]] | None = None):
        self.home = Path(home)
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.procs: dict[str, subprocess.Popen] = {}
        self.token: str | None = None
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
            "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_urlsafe(32),  # this stack's own, never in code
            "AIRFLOW__API__SECRET_KEY": secrets.token_urlsafe(32),
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
            "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "1",
            "PYTHONPATH": f"{ROOT}:{env.get('PYTHONPATH', '')}".rstrip(":"),
        })
        if users:
            self.home.mkdir(parents=True, exist_ok=True)
            passwords = self.home / "simple_auth_manager_passwords.json"
            passwords.write_text(json.dumps({u: pw for u, (_role, pw) in users.items()}))
            env.update({"AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "False",
                        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": ",".join(f"{u}:{r}" for u, (r, _) in users.items()),
                        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords)})
        env.update(extra_env)
        self.env = env

    def run(self, *args: str, timeout: float = 600, extra_env: dict | None = None) -> str:
        out = subprocess.run(list(args), env={**self.env, **(extra_env or {})}, capture_output=True, text=True,
                             timeout=timeout)
        if out.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed ({out.returncode}): {out.stderr[-3000:]}")
        return out.stdout

    def setup(self, gpu_slots: int, extra_env: dict | None = None) -> None:
        """`airflow db migrate`, pool gpu, the timing connection: the project's own setup
        (``extra_env``: for it alone, e.g. the timing store's URL for the connection)."""
        self.home.mkdir(parents=True, exist_ok=True)
        self.run(sys.executable, "-m", "operators.cli", "setup", "--gpu-slots", str(gpu_slots), extra_env=extra_env)

    def _spawn(self, name: str, args: list[str], env: dict) -> None:
        log = open(self.home / f"{name}.log", "ab")
        self.procs[name] = subprocess.Popen(_airflow_bin() + args, env=env, stdout=log, stderr=subprocess.STDOUT,
                                            start_new_session=True)
        log.close()

    def start_api(self) -> None:
        self._spawn("api-server", ["api-server", "--port", str(self.port)], self.env)
        self.wait("the api server", lambda: self.api("/api/v2/monitor/health"), 180)

    def start_workers(self, extra_env: dict | None = None) -> None:
        """Scheduler and dag-processor (``extra_env`` on top, e.g. a token only known once
        the api server runs); returns once proof_run is parsed."""
        env = {**self.env, **(extra_env or {})}
        for name in ("scheduler", "dag-processor"):
            self._spawn(name, [name], env)
        self.wait("proof_run to be parsed", lambda: self.api("/api/v2/dags/proof_run")["is_paused"] is False, 240, 2)

    def start(self) -> None:
        self.start_api()
        self.start_workers()

    def request(self, path: str, body=None, token: str | None = None, timeout: float = 10):
        """(status, parsed body) of one request, errors included; ``token`` None: this stack's."""
        headers = {"Content-Type": "application/json"}
        token = self.token if token is None else token
        if token:
            headers["Authorization"] = f"Bearer {token}"
        req = urllib.request.Request(self.base + path, method="POST" if body is not None else "GET",
                                     data=json.dumps(body).encode() if body is not None else None, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            try:
                return exc.code, json.loads(raw or b"null")
            except ValueError:
                return exc.code, raw.decode(errors="replace")

    def api(self, path: str, body=None, timeout: float = 10):
        status, doc = self.request(path, body, timeout=timeout)
        if status >= 400:
            raise urllib.error.HTTPError(self.base + path, status, json.dumps(doc), None, None)
        return doc

    def login(self, user: str, password: str) -> str:
        status, doc = self.request("/auth/token", {"username": user, "password": password}, token="")
        if status >= 400:
            raise RuntimeError(f"login as {user} refused ({status}): {doc}")
        self.token = doc["access_token"]
        return self.token

    def rss(self) -> dict[str, int]:
        """Resident bytes per component: the processes of its session (workers included)."""
        out = {name: 0 for name in self.procs}
        sessions = {p.pid: name for name, p in self.procs.items()}
        for d in Path("/proc").iterdir():
            if not d.name.isdigit():
                continue
            try:
                sid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[3])
                if sid in sessions:
                    rss = next(line for line in (d / "status").read_text().splitlines() if line.startswith("VmRSS:"))
                    out[sessions[sid]] += int(rss.split()[1]) * 1024
            except (OSError, StopIteration, IndexError, ValueError):
                continue
        return out

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
