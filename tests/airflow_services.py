"""A real Airflow for tests: api-server, scheduler (LocalExecutor) and dag-processor as
subprocesses on a fresh Postgres metadata DB, each in its own process group, stopped
afterwards; plus the small REST helpers the tests poll it with."""
import contextlib
import json
import os
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


def api(base, path, body=None, method=None, token=None, timeout=10):
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(base + path, method=method or ("POST" if body is not None else "GET"),
                                 data=json.dumps(body).encode() if body is not None else None, headers=headers)
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read() or b"null")


def token(base, username, password) -> str:
    return api(base, "/auth/token", {"username": username, "password": password})["access_token"]


def wait(what, fn, timeout, every=1.0):
    """Poll ``fn`` until it returns something truthy (connection errors count as not yet)."""
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            v = fn()
            if v:
                return v
        except (urllib.error.URLError, ConnectionError, OSError, ValueError) as exc:
            last = exc
        time.sleep(every)
    raise AssertionError(f"timed out waiting for {what} ({last})")


def airflow_env(tmp_path, meta_url: str, timing_url: str, port: int, **extra) -> dict:
    """This process's environment without its Airflow/proofflow settings, pointing a fresh
    AIRFLOW_HOME under ``tmp_path`` at the repo's dags, ``meta_url`` and the API on ``port``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "PROOFFLOW_"))}
    env.update({
        "PATH": f"{BIN}:{env.get('PATH', '')}",
        "AIRFLOW_HOME": str(tmp_path / "airflow"),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": meta_url,
        "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
        "AIRFLOW__CORE__PARALLELISM": "4",
        "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "dags"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/",
        "AIRFLOW__API__HOST": "127.0.0.1",
        "AIRFLOW__API__PORT": str(port),
        "AIRFLOW__API__WORKERS": "1",
        "AIRFLOW__API_AUTH__JWT_SECRET": "proofflow-test-jwt-secret",
        "AIRFLOW__API__SECRET_KEY": "proofflow-test-secret-key",
        "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
        "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "1",
        "PROOFFLOW_HOME": str(tmp_path / "proofflow"),
        "PROOFFLOW_DB_URL": timing_url,
    })
    env.update(extra)
    return env


def proofflow_setup(env) -> dict:
    """``proofflow setup``: the metadata DB migrated, pool ``gpu`` (one slot), the timing tables."""
    out = subprocess.run([str(BIN / "proofflow"), "setup", "--gpu-slots", "1"], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@contextlib.contextmanager
def running(env, log_dir: Path):
    """The three services, logging to ``log_dir``; yields the API's base URL once it answers."""
    port = env["AIRFLOW__API__PORT"]
    procs, logs = {}, {}
    try:
        for name, args in {"api-server": ["api-server", "--port", port], "scheduler": ["scheduler"],
                           "dag-processor": ["dag-processor"]}.items():
            logs[name] = open(log_dir / f"{name}.log", "wb")
            procs[name] = subprocess.Popen([str(BIN / "airflow")] + args, env=env, stdout=logs[name],
                                           stderr=subprocess.STDOUT, start_new_session=True)
        base = f"http://127.0.0.1:{port}"
        wait("the api server", lambda: api(base, "/api/v2/monitor/health"), 120)
        yield base
    finally:
        for p in procs.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)
        for p in procs.values():
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        for f in logs.values():
            f.close()
