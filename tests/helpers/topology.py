"""The processes of a proofflow deployment, in one table for both ways of running them:
docker-compose.yml's service commands (tests/airflow/test_compose.py holds the file to this table)
and the native test of the same topology (tests/airflow/test_celery_topology.py starts these
commands as subprocesses), so the two cannot drift apart.

Arguments use compose's interpolation syntax (``${VAR}``, ``${VAR:-default}``,
``${VAR:?error}``); ``command`` substitutes them from an environment the way compose does from
``.env``.
"""
from __future__ import annotations

import re

#: one-shot: migrate the metadata DB, pool ``gpu`` (slots = prove_gpu slots of all GPU
#: workers), connection ``proofflow_timing``, timing tables
INIT = "airflow-init"

SERVICES: dict[str, list[str]] = {
    INIT: ["proofflow", "setup", "--gpu-slots", "${PROOFFLOW_GPU_SLOTS:-4}"],
    "api-server": ["airflow", "api-server", "--port", "${AIRFLOW_API_PORT:-8080}"],
    "scheduler": ["airflow", "scheduler"],
    "dag-processor": ["airflow", "dag-processor"],
    "triggerer": ["airflow", "triggerer"],
    # every task but stage and prove_gpu; the Celery node names keep two workers of one host apart
    "worker-cpu": ["airflow", "celery", "worker", "--queues", "${PROOFFLOW_CPU_QUEUE:-cpu}",
                   "--concurrency", "${PROOFFLOW_CPU_WORKER_CONCURRENCY:-4}", "--celery-hostname", "cpu@%h"],
    # stage and prove_gpu (they talk to the host's prover service): one GPU worker per GPU
    # host, concurrency = that host's slots of pool gpu (a stage takes milliseconds)
    "worker-gpu": ["airflow", "celery", "worker", "--queues", "${PROOFFLOW_GPU_QUEUE:-gpu}",
                   "--concurrency", "${PROOFFLOW_GPU_WORKER_SLOTS:-4}", "--celery-hostname", "gpu@%h"],
    # on each GPU host: partitions synthesized on other hosts stream into its shared staging
    "staging-receiver": ["proofflow", "staging-receiver", "--listen", "0.0.0.0:${PROOFFLOW_STAGING_PORT:-7017}"],
}

_VAR = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?::(?P<op>[-?])(?P<arg>[^}]*))?\}")


def expand(arg: str, env: dict) -> str:
    """``${VAR}`` / ``${VAR:-default}`` / ``${VAR:?error}`` substituted from ``env`` (``:-``
    and ``:?`` also cover an empty value, as in compose); a variable without a value or
    default is an error."""
    def sub(m: re.Match) -> str:
        value = env.get(m["name"])
        if value:
            return value
        if m["op"] == "-":
            return m["arg"]
        raise KeyError(f"{m['name']} is not set and {arg!r} gives no default")
    return _VAR.sub(sub, arg)


def command(service: str, env: dict) -> list[str]:
    """The service's command line with its variables substituted from ``env``."""
    if service not in SERVICES:
        raise KeyError(f"unknown service {service!r}; known: {', '.join(SERVICES)}")
    return [expand(a, env) for a in SERVICES[service]]


def variables() -> set[str]:
    """Every variable the commands read."""
    return {m["name"] for args in SERVICES.values() for a in args for m in _VAR.finditer(a)}
