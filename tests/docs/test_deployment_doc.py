"""docs/deployment.md's LocalExecutor steps run as written: every fenced block marked ``run``
(```` ```sh run ````), in order, in one bash with ``set -euo pipefail``, a new ``$HOME`` and this
checkout as the working directory, against a Postgres cluster of the tests' own. The blocks left
to the operator are the install (this interpreter's environment stands for it) and the site's
values, given here: the cluster's address and superuser, a free API port. The log servers get
free ports too, so the test runs beside other deployments on this host.

Then what a new operator meets is checked: setup said how to log in and had no advice left;
the run succeeded and the SQL showed it; only proofflow's DAGs, proof_run unpaused; the
triggerer healthy. The daemons the blocks started are stopped at the end (their process group)."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import local_stack as stack

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "deployment.md"
FENCE = re.compile(r"^```(?P<info>[^\n]*)\n(?P<body>.*?)^```$", re.S | re.M)


def blocks(text: str) -> list[tuple[str, str]]:
    """(info string, body) of every fenced block, in order."""
    return [(m["info"].strip(), m["body"]) for m in FENCE.finditer(text)]


def run_blocks(text: str) -> list[str]:
    return [body for info, body in blocks(text) if info.split()[1:2] == ["run"]]


def test_the_marked_blocks_are_the_local_executor_steps():
    text = DOC.read_text()
    section = text[text.index("## One host: LocalExecutor"):text.index("## Docker Compose")]
    assert run_blocks(section) == run_blocks(text)  # every run block is in the LocalExecutor section
    infos = [info for info, _ in blocks(section)]
    # the install and the site's values are the operator's; the systemd unit is a file
    assert infos == ["sh", "sh", "sh run", "sh run", "sh run", "sh run", "ini", "sh run", "sh run"]
    steps = "\n".join(run_blocks(section))
    for step in ("CREATE DATABASE airflow", "proofflow setup", "proofflow calibrate", "dag-processor triggerer",
                 '"logical_date": null', "FROM run_summary"):
        assert step in steps, step
    assert "'pinned'" not in steps  # a CPU run's staging is pageable: such a filter shows nothing


def _stop_group(pgid: int, timeout: float = 30) -> None:
    """SIGTERM to the blocks' process group (the shell and the daemons it left), then SIGKILL."""
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.5)
    os.killpg(pgid, signal.SIGKILL)


@pytest.mark.slow
def test_the_local_executor_steps_run_as_written(tmp_path, isolated_pg):
    home = tmp_path / "home"
    home.mkdir()
    port = stack.free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "PROOFFLOW_", "PG"))}
    env.update({
        "HOME": str(home),
        "PATH": f"{Path(sys.executable).parent}:{env['PATH']}",  # the install: this interpreter's environment
        "PYTHONPATH": str(ROOT),
        # the site's values
        "PGHOST": "127.0.0.1", "PGPORT": str(isolated_pg.port), "PGUSER": "postgres",
        "PGPASSWORD": isolated_pg.password, "API_PORT": str(port),
        "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(stack.free_port()),
        "AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT": str(stack.free_port()),
    })
    script = "set -euo pipefail\n" + "".join(f"echo \"### block {i} at $SECONDS s\" >&2\n{body}"
                                             for i, body in enumerate(run_blocks(DOC.read_text())))
    log_path = tmp_path / "blocks.log"
    with open(log_path, "wb") as log:
        shell = subprocess.Popen(["bash", "-c", script], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        try:
            rc = shell.wait(timeout=400)
        except subprocess.TimeoutExpired:
            rc = None
        out = log_path.read_text(errors="replace")
        assert rc == 0, f"the blocks exited {rc}:\n{out[-6000:]}\n{_daemon_logs(home)}"

        airflow_home = home / "proofflow" / "airflow"
        passwords = airflow_home / "simple_auth_manager_passwords.json.generated"
        assert (f"setup: log in at http://127.0.0.1:{port} as admin, with the password under key 'admin' of "
                f"{passwords}") in out
        assert "advice:" not in out, out  # the environment file left nothing to change
        (run_id,) = re.findall(r"^(\S+): success$", out, re.M)
        # the SQL: the run's summary row (what ran, its proofs) and its device phases
        row = next(line for line in out.splitlines() if line.strip().startswith(run_id) and "|" in line)
        cells = [c.strip() for c in row.split("|")]
        assert cells[1:6] == ["success", "cpu", "pageable", "2", "2"], row
        for phase in ("h2d", "ntt", "msm"):
            assert re.search(rf"^\s*{phase}\s*\|\s*2\s*\|", out, re.M), phase

        base = f"http://127.0.0.1:{port}"
        token = stack.token(base, "admin", json.loads(passwords.read_text())["admin"])
        dags = {d["dag_id"]: d["is_paused"] for d in stack.api(base, "/api/v2/dags", token=token)["dags"]}
        assert dags == {"proof_run": False, "proof_batch": True}  # no example DAG; proof_run ready
        health = stack.api(base, "/api/v2/monitor/health", token=token)
        assert {k: health[k]["status"] for k in ("scheduler", "triggerer", "dag_processor")} == \
            dict.fromkeys(("scheduler", "triggerer", "dag_processor"), "healthy")
    finally:
        _stop_group(shell.pid)
        # the prover service the run started stops with its home's runtime directory's services
        subprocess.run(["bash", "-c", "set -a && . ~/proofflow/env && set +a && python -c "
                        "'from proofflow.prover.service.client import stop_all; stop_all()'"],
                       env=env, timeout=60, capture_output=True)
        isolated_pg.sql("DROP DATABASE IF EXISTS airflow WITH (FORCE)")
        isolated_pg.sql("DROP DATABASE IF EXISTS proofflow WITH (FORCE)")
        isolated_pg.sql("DROP ROLE IF EXISTS airflow")


def _daemon_logs(home: Path) -> str:
    logs = home / "proofflow" / "logs"
    return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-2000:]}"
                     for p in sorted(logs.glob("*.log"))) if logs.is_dir() else ""
