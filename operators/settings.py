"""Where proofflow keeps things, each from one setting (env var first, then a default).

    PROOFFLOW_DB_URL        timing store URL (else the Airflow connection ``proofflow_timing``,
                            else SQLite at $PROOFFLOW_HOME/timing.db)
    PROOFFLOW_HOME          base of the defaults below ($AIRFLOW_HOME/proofflow, or
                            ~/airflow/proofflow when AIRFLOW_HOME is unset)
    PROOFFLOW_SCRATCH       run-scoped scratch dirs ($PROOFFLOW_HOME/scratch)
    PROOFFLOW_PARAMS_CACHE  proving keys, one dir per (circuit, log2, seed) ($PROOFFLOW_HOME/params)
    PROOFFLOW_BUNDLES       finished proof bundles ($PROOFFLOW_HOME/bundles)
"""
from __future__ import annotations

import os
from pathlib import Path

TIMING_CONN_ID = "proofflow_timing"
GPU_POOL = "gpu"


def home() -> Path:
    if os.environ.get("PROOFFLOW_HOME"):
        return Path(os.environ["PROOFFLOW_HOME"])
    airflow_home = os.environ.get("AIRFLOW_HOME") or os.path.expanduser("~/airflow")
    return Path(airflow_home) / "proofflow"


def _dir(env: str, default: str) -> Path:
    return Path(os.environ[env]) if os.environ.get(env) else home() / default


def scratch_root() -> Path:
    return _dir("PROOFFLOW_SCRATCH", "scratch")


def params_cache() -> Path:
    return _dir("PROOFFLOW_PARAMS_CACHE", "params")


def bundles_root() -> Path:
    return _dir("PROOFFLOW_BUNDLES", "bundles")


def default_db_url() -> str:
    return f"sqlite:///{home() / 'timing.db'}"


def db_url_from_env() -> str | None:
    return os.environ.get("PROOFFLOW_DB_URL") or None
