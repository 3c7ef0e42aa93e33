"""Where proofflow keeps things, each from one setting (env var first, then a default).

    PROOFFLOW_DB_URL        timing store URL (else the Airflow connection ``proofflow_timing``,
                            else SQLite at $PROOFFLOW_HOME/timing.db)
    PROOFFLOW_HOME          base of the defaults below ($AIRFLOW_HOME/proofflow, or
                            ~/airflow/proofflow when AIRFLOW_HOME is unset)
    PROOFFLOW_SCRATCH       run-scoped scratch dirs ($PROOFFLOW_HOME/scratch)
    PROOFFLOW_PARAMS_CACHE  proving keys, one dir per (circuit, log2, seed) ($PROOFFLOW_HOME/params)
    PROOFFLOW_BUNDLES       finished proof bundles ($PROOFFLOW_HOME/bundles)

How prove_gpu reaches the device:
    PROOFFLOW_GPU_SERVICE   1 (default): through the device's long-lived prover service
                            (proofflow/prover/service); 0: in the task's own process (the naive design,
                            kept for comparison)
    PROOFFLOW_GPU_DEPTH     prove_gpu tasks in flight per device with the service (default 4:
                            one on the device, the next ones' inputs prefetched, enough to
                            cover Airflow's hand-off of ~1-2.5 s at a ~1 s device phase); the
                            pool `gpu` gets devices x depth slots (1 a device in-process)
    PROOFFLOW_GPU_DEVICES   device indices this worker proves on (e.g. "0,1"; default: one
                            per entry of CUDA_VISIBLE_DEVICES, else 0)
    PROOFFLOW_STANDIN_GPU_S stretch each proof's device phase to this many seconds (a
                            calibrated stand-in for a GPU phase, for the pipeline benchmark)

Where tasks run under the CeleryExecutor (LocalExecutor and dag.test() ignore queues):
    PROOFFLOW_GPU_QUEUE     Celery queue of prove_gpu, served by the GPU workers (gpu)
    PROOFFLOW_CPU_QUEUE     Celery queue of every other task (cpu)

Faults:
    PROOFFLOW_DB_RETRY_S    how long the timing store retries a lost database connection (60)
    PROOFFLOW_STAGING_BUDGET / PROOFFLOW_STAGING_TIMEOUT
                            the staging pool's byte budget (8 GiB) and how long a request waits
                            for room in it before failing (600 s)
    PROOFFLOW_FAULT         fault injection for the reliability tests (proofflow/prover/faults.py); unset
                            in operation
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


def gpu_service_enabled() -> bool:
    return os.environ.get("PROOFFLOW_GPU_SERVICE", "1").strip().lower() not in ("0", "false", "no", "off")


def gpu_depth() -> int:
    depth = int(os.environ.get("PROOFFLOW_GPU_DEPTH", "4"))
    if depth < 1:
        raise ValueError(f"PROOFFLOW_GPU_DEPTH must be >= 1, got {depth}")
    return depth


def gpu_devices() -> list[int]:
    spec = os.environ.get("PROOFFLOW_GPU_DEVICES") or ""
    if spec.strip():
        return [int(x) for x in spec.split(",") if x.strip()]
    visible = [x for x in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if x.strip()]
    return list(range(len(visible))) or [0]


def standin_gpu_s() -> float | None:
    v = os.environ.get("PROOFFLOW_STANDIN_GPU_S")
    return float(v) if v else None


def gpu_queue() -> str:
    return os.environ.get("PROOFFLOW_GPU_QUEUE") or "gpu"


def cpu_queue() -> str:
    return os.environ.get("PROOFFLOW_CPU_QUEUE") or "cpu"
