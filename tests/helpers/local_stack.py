"""A proofflow deployment run natively, without Docker: the processes of the deployment's
topology (``tests/helpers/topology.py``, the commands docker-compose.yml runs) as subprocesses
of one home, the REST API they serve, and their shutdown.

The test suite's real-scheduler tests and the pipeline benchmark run Airflow through this,
so they start exactly what a deployment starts. Each process gets its own session and a log
file; leaving ``Processes`` (or ``running``) stops them all, SIGTERM first, then SIGKILL.
"""
from __future__ import annotations

import contextlib
import itertools
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from proofflow.airflow.hooks.api import AirflowApi, AirflowApiError

from tests.helpers import topology  # by its package path: bench imports this module as tests.helpers.local_stack

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
# where a tool has no console script on PATH (e.g. the project run from a source tree
# with --target-installed dependencies), its module runs under this interpreter
_MODULES = {"airflow": "airflow", "proofflow": "proofflow.cli"}
CORE_SERVICES = ("api-server", "scheduler", "dag-processor")


def _port_block() -> range:
    """This process's own ports, below the kernel's ephemeral range: a port the kernel hands
    out (bind to 0) is released before the service binds it, and the kernel may hand it to
    another process (another xdist worker's) meanwhile. One block per xdist worker, else by pid."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    worker = os.environ.get("PYTEST_XDIST_WORKER", "").removeprefix("gw")
    blocks = max(1, (low - 10000) // 500)
    index = int(worker) if worker.isdigit() else os.getpid()
    start = 10000 + 500 * (index % blocks)
    return range(start, start + 500)


_next_port = itertools.count(secrets.randbelow(500))


def free_port() -> int:
    """A port of this process's block that nothing listens on now."""
    block = _port_block()
    for _ in range(len(block)):
        port = block[next(_next_port) % len(block)]
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {block.start}..{block.stop - 1}")


def airflow_env(home: Path, meta_url: str, port: int, executor: str = "LocalExecutor", **extra: str) -> dict:
    """The environment of every process of one native deployment: this interpreter's tools
    first on PATH, a home of its own, the metadata DB, the API server on ``port`` (also the
    topology's AIRFLOW_API_PORT), nothing inherited from AIRFLOW_* / PROOFFLOW_*; ``extra``
    on top."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "PROOFFLOW_"))}
    env.update({
        "PATH": f"{BIN}:{env.get('PATH', '')}",
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p),
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
        "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_urlsafe(32),  # this deployment's own, never in code
        "AIRFLOW__API__SECRET_KEY": secrets.token_urlsafe(32),
        "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
        "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "1",
        # A task's supervisor notices its task process's exit only at its next heartbeat
        # check (5 s by default), holding an executor or worker slot that long.
        "AIRFLOW__WORKERS__MIN_HEARTBEAT_INTERVAL": "1",
        # the executor's log server: a port of its own, so deployments side by side don't collide
        "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(free_port()),
    })
    env.update(extra)
    return env


def api(base: str, path: str, body=None, method: str | None = None, token: str | None = None,
        timeout: float = 10):
    """One request through proofflow's REST client (``proofflow.airflow.hooks.api``)."""
    return AirflowApi(base, token=token, timeout=timeout).call(method or ("POST" if body is not None else "GET"),
                                                               path, body)


def api_connection_env(base: str, login: str | None = None, password: str | None = None) -> dict:
    """The environment entry defining the connection proofflow's tasks reach the REST API by."""
    host, _, port = base.split("://", 1)[1].partition(":")
    conn = {"conn_type": "http", "host": host, "port": int(port) if port else None, "schema": "http"}
    if login:
        conn.update(login=login, password=password)
    return {"AIRFLOW_CONN_PROOFFLOW_AIRFLOW_API": json.dumps(conn)}


def users_env(home: Path, users: dict[str, tuple[str, str]]) -> dict:
    """The simple auth manager checking ``users`` ({name: (role, password)}) instead of
    making every request admin: the environment entries, the passwords file in ``home``."""
    Path(home).mkdir(parents=True, exist_ok=True)
    passwords = Path(home) / "simple_auth_manager_passwords.json"
    passwords.write_text(json.dumps({u: pw for u, (_role, pw) in users.items()}))
    return {"AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "False",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": ",".join(f"{u}:{r}" for u, (r, _) in users.items()),
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords)}


def request(base: str, path: str, body=None, token: str | None = None, method: str | None = None,
            timeout: float = 10) -> tuple[int, object]:
    """(status, parsed body) of one request, error answers included."""
    try:
        return 200, api(base, path, body, method=method, token=token, timeout=timeout)
    except AirflowApiError as exc:
        if exc.status is None:
            raise
        return exc.status, exc.body


def token(base: str, username: str, password: str) -> str:
    return api(base, "/auth/token", {"username": username, "password": password})["access_token"]


def wait(what: str, fn, timeout: float, every: float = 1.0, procs: "Processes | None" = None):
    """Poll ``fn`` until it returns something true (connection errors count as not yet);
    fails at once if one of ``procs`` died."""
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        if procs is not None:
            procs.check_alive()
        try:
            v = fn()
            if v:
                return v
        except (AirflowApiError, ConnectionError, OSError, ValueError) as exc:
            last = exc
        time.sleep(every)
    raise TimeoutError(f"timed out waiting for {what} ({last})")


def _resolve(argv: list[str], env: dict) -> list[str]:
    exe = shutil.which(argv[0], path=env["PATH"])
    if exe:
        return [exe] + argv[1:]
    if argv[0] in _MODULES:
        return [sys.executable, "-m", _MODULES[argv[0]]] + argv[1:]
    raise FileNotFoundError(f"{argv[0]} not found on {env['PATH']}")


def run(argv: list[str], env: dict, timeout: float = 300) -> subprocess.CompletedProcess:
    """A command of this deployment, to successful completion."""
    argv = _resolve(argv, env)
    out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {out.returncode}: {out.stderr[-3000:]}")
    return out


def run_service(service: str, env: dict, timeout: float = 300) -> subprocess.CompletedProcess:
    """A one-shot service of the topology (``airflow-init``), to successful completion."""
    return run(topology.command(service, env), env, timeout)


def proofflow_setup(env: dict, gpu_slots: int) -> dict:
    """The topology's init (``proofflow setup``): metadata DB, pool ``gpu``, timing tables."""
    out = run_service(topology.INIT, {**env, "PROOFFLOW_GPU_SLOTS": str(gpu_slots)})
    return json.loads(out.stdout.strip().splitlines()[-1])


class Processes:
    """Long-running services of the topology as subprocesses, each in its own session with
    its output in ``<logs>/<name>.log``; leaving the block stops them all."""

    def __init__(self, logs: Path):
        self.logs = Path(logs)
        self.procs: dict[str, subprocess.Popen] = {}

    def start(self, name: str, env: dict, service: str | None = None) -> None:
        """Start topology service ``service`` (default: ``name``) under ``name``."""
        self.logs.mkdir(parents=True, exist_ok=True)
        with open(self.logs / f"{name}.log", "wb") as log:
            self.procs[name] = subprocess.Popen(_resolve(topology.command(service or name, env), env), env=env,
                                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def check_alive(self) -> None:
        for name, p in self.procs.items():
            if p.poll() is not None:
                tail = (self.logs / f"{name}.log").read_text(errors="replace")[-3000:]
                raise RuntimeError(f"{name} exited with {p.returncode}:\n{tail}")

    def rss(self) -> dict[str, int]:
        """Resident bytes per service: all processes of its session (its task workers too)."""
        out = {name: 0 for name in self.procs}
        sessions = {p.pid: name for name, p in self.procs.items()}
        for d in Path("/proc").iterdir():
            if not d.name.isdigit():
                continue
            try:
                sid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[3])
                if sid in sessions:
                    line = next(x for x in (d / "status").read_text().splitlines() if x.startswith("VmRSS:"))
                    out[sessions[sid]] += int(line.split()[1]) * 1024
            except (OSError, StopIteration, IndexError, ValueError):
                continue
        return out

    def stop(self) -> None:
        for p in self.procs.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)
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


@contextlib.contextmanager
def running(env: dict, logs: Path, services=CORE_SERVICES, health_timeout: float = 180):
    """``services`` started (api-server, scheduler, dag-processor by default); yields the
    API's base URL once it answers, and the Processes (to start more, or watch them)."""
    with Processes(logs) as procs:
        for name in services:
            procs.start(name, env)
        base = f"http://127.0.0.1:{env['AIRFLOW__API__PORT']}"
        wait("the api server", lambda: api(base, "/api/v2/monitor/health"), health_timeout, procs=procs)
        yield base, procs


def trigger(base: str, dag_id: str, conf: dict | None = None, token: str | None = None, attempts: int = 3) -> str:
    """A new run of ``dag_id``; a server error (e.g. a SQLite metadata DB busy past its
    timeout: nothing was created) is retried."""
    body = {"logical_date": None} if conf is None else {"logical_date": None, "conf": conf}
    for attempt in range(attempts):
        try:
            return api(base, f"/api/v2/dags/{dag_id}/dagRuns", body, token=token)["dag_run_id"]
        except AirflowApiError as exc:
            if exc.status is None or exc.status < 500 or attempt == attempts - 1:
                raise
            time.sleep(2)


def wait_for_run(base: str, dag_id: str, run_id: str, timeout: float, procs: "Processes | None" = None,
                 token: str | None = None) -> tuple[str, list]:
    """A run's final state (success or failed) and its task instances."""
    def finished():
        state = api(base, f"/api/v2/dags/{dag_id}/dagRuns/{run_id}", token=token)["state"]
        return state if state in ("success", "failed") else None
    state = wait(f"run {run_id} of {dag_id}", finished, timeout, 2, procs=procs)
    tis = api(base, f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances?limit=500", token=token)["task_instances"]
    return state, tis
