"""Every environment variable proofflow reads, in one place (read when asked, so a changed
environment applies to the next call). No other module of the product reads the
environment.

Where things live:
    PROOFFLOW_HOME          base of the defaults below (~/.proofflow; $AIRFLOW_HOME/proofflow
                            when AIRFLOW_HOME is set, so each Airflow deployment has its own)
    PROOFFLOW_DB_URL        timing store URL (else the Airflow connection ``proofflow_timing``,
                            else SQLite at $PROOFFLOW_HOME/timing.db)
    PROOFFLOW_SCRATCH       run-scoped scratch dirs ($PROOFFLOW_HOME/scratch)
    PROOFFLOW_PARAMS_CACHE  proving keys, one dir per (circuit, log2, seed) ($PROOFFLOW_HOME/params)
    PROOFFLOW_CIRCUITS      registered circom circuits, one dir each ($PROOFFLOW_HOME/circuits)
    PROOFFLOW_BUNDLES       finished proof bundles ($PROOFFLOW_HOME/bundles)
    PROOFFLOW_PENDING       proof_batch's pending work files ($PROOFFLOW_HOME/pending)
    PROOFFLOW_REPORTS       check_h2d's results and data docs ($PROOFFLOW_HOME/reports)
    PROOFFLOW_AIRFLOW_HOME  the embedded Airflow home of `proofflow run` ($PROOFFLOW_HOME/airflow)
    PROOFFLOW_DAGS_FOLDER   the DAG files `proofflow run` loads (the source tree's dags/)
    PROOFFLOW_CACHE         compiled CPU kernels ($XDG_CACHE_HOME/proofflow, ~/.cache/proofflow)
    PROOFFLOW_KERNEL_DIR    compiled GPU kernels, cubins ($PROOFFLOW_CACHE/kernels)
    PROOFFLOW_RUNTIME       the prover services' sockets (/tmp/proofflow-<uid>/<digest of home>)

The GPU kernels:
    PROOFFLOW_CUDA_ARCHS    compute capabilities `proofflow kernels build` compiles for when no
                            --arch is given (e.g. "90" or "80,90"; default: the visible device's)

How prove_gpu reaches the device:
    PROOFFLOW_GPU_SERVICE   1 (default): through the device's long-lived prover service
                            (proofflow/prover/service); 0: in the task's own process (the naive
                            design, kept for comparison)
    PROOFFLOW_GPU_DEPTH     prove_gpu tasks in flight per device with the service (default 4:
                            one on the device, the next one uploading, the others mapped, enough to
                            cover Airflow's hand-off of ~1-2.5 s at a ~1 s device phase); the
                            pool `gpu` gets devices x depth slots (1 a device in-process)
    PROOFFLOW_GPU_SLOTS     the pool's slots, overriding devices x depth (a deployment's sum)
    PROOFFLOW_GPU_DEVICES   device indices this worker proves on (e.g. "0,1"; default: one
                            per entry of CUDA_VISIBLE_DEVICES, else 0)
    PROOFFLOW_STANDIN_GPU_S stretch each proof's device phase to this many seconds (a
                            calibrated stand-in for a GPU phase, for the pipeline benchmark)
    PROOFFLOW_STAGING_BUDGET / PROOFFLOW_STAGING_TIMEOUT
                            the byte budget (8 GiB) of the shared staging (the partitions'
                            a/b/c segments on a host) and of a process's own staging pool, and
                            how long a request waits for room before failing (600 s)
    PROOFFLOW_SHARED_STAGING / PROOFFLOW_STAGING_LEASE_TTL_S / _IDLE_TTL_S
                            the shared staging directory (a tmpfs: /dev/shm/proofflow-<uid>-<home
                            digest>), how long a segment may stay leased (86400 s), and how long
                            a released one is kept for reuse (600 s)
    PROOFFLOW_STAGING_ENDPOINT / _LISTEN / _TOKEN
                            cross-host staging: where a CPU worker of another host streams its
                            partitions (the GPU host's receiver, HOST:PORT), where that receiver
                            listens (127.0.0.1:7017), and the secret both share
    PROOFFLOW_SERVICE_IDLE_S / _START_TIMEOUT / _JOB_TIMEOUT
                            a prover service stops after this long idle (600 s); a caller waits
                            this long for one to start (600 s: a first compile) and for a job (3600 s)
    PROOFFLOW_KEY_BUDGET    device memory a prover service keeps proving keys resident in: bytes
                            (an integer), or a fraction of the device's memory (a number up to
                            1; the host's memory for the CPU backend); default 0.5. Least
                            recently used keys are evicted to fit a new one
    PROOFFLOW_MSM_PRECOMPUTE
                            device bytes a GPU prover may add to each proving key for its
                            MSMs' precomputed multiples of the key's points (default 0: none),
                            or auto: half the key budget less the key's own tables, so two
                            keys as large stay resident; counted in the key's resident bytes
                            (proofflow/prover/device/pippenger.py)
    PROOFFLOW_MSM_OVERLAP   1: a GPU proof's independent MSMs (A, B_G1, B_G2, L, H) run at once,
                            each on a stream of its own (proofflow/prover/device/overlap.py);
                            default 0: one after another. Their scratch then adds up, and
                            ``resources`` counts it so
    PROOFFLOW_CURVE_VARIANT the product variant of a GPU prover's curve kernels (MSMs, fixed-base,
                            bit sums): call (default), wide or mul32 (proofflow/prover/device/source.py;
                            all give the same values, docs/gpu-kernels.md compares their speed)
    PROOFFLOW_MSM_BALANCED  1 (default): a GPU prover's MSMs accumulate their buckets in balanced
                            spans (pippenger.msm ``balanced``); 0: pieces a bucket
    PROOFFLOW_SETUP_WORKERS processes of the CPU setup's fixed-base multiplications (the cores)
    PROOFFLOW_SETUP_LOCK    the lock file that lets one GPU setup run at a time on a host
                            (/tmp/proofflow-<uid>/gpu-setup.lock)

Where tasks run (CeleryExecutor; LocalExecutor and dag.test() ignore queues):
    PROOFFLOW_GPU_QUEUE / PROOFFLOW_CPU_QUEUE   the GPU host's tasks' queue (gpu: synthesize,
                            stage and prove_gpu, which share its memory), every other task's (cpu)
    PROOFFLOW_WORKER_NAME   the host name a worker records (proofflow.airflow.worker)

The DAGs: PROOFFLOW_RETRIES (1), PROOFFLOW_SYNTH_CONCURRENCY (no limit),
PROOFFLOW_MAX_ACTIVE_RUNS (4), PROOFFLOW_BATCH_CRON (*/15 * * * *; none: proof_batch runs
only when triggered).
    PROOFFLOW_PRELOAD       1 (default): the scheduler, dag-processor and triggerer import the
                            tasks' modules at their start, so the processes they fork for tasks
                            and parsing inherit them (proofflow/airflow/preload.py); 0: off

Checks and alerts: PROOFFLOW_H2D_<NAME> (check_h2d's settings, proofflow.timing.h2d_check),
PROOFFLOW_SMTP_CONN_ID (smtp_default), PROOFFLOW_ALERT_EMAIL.

Faults:
    PROOFFLOW_DB_RETRY_S    how long the timing store retries a lost database connection (60)
    PROOFFLOW_FAULT         fault injection for the reliability tests (proofflow/prover/faults.py);
                            unset in operation
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

TIMING_CONN_ID = "proofflow_timing"
API_CONN_ID = "proofflow_airflow_api"
WEBHOOK_CONN_ID = "proofflow_webhook"
GPU_POOL = "gpu"


def _get(name: str, default: str | None = None) -> str | None:
    """The variable's value, or ``default`` when it is unset or empty."""
    return os.environ.get(name) or default


def _float(name: str, default: float) -> float:
    return float(_get(name) or default)


# -- where things live -----------------------------------------------------------------------
def home() -> Path:
    if _get("PROOFFLOW_HOME"):
        return Path(_get("PROOFFLOW_HOME"))
    if _get("AIRFLOW_HOME"):
        return Path(_get("AIRFLOW_HOME")) / "proofflow"
    return Path.home() / ".proofflow"


def _dir(env: str, default: str) -> Path:
    return Path(_get(env)) if _get(env) else home() / default


def scratch_root() -> Path:
    return _dir("PROOFFLOW_SCRATCH", "scratch")


def params_cache() -> Path:
    return _dir("PROOFFLOW_PARAMS_CACHE", "params")


def circuits_dir() -> Path:
    return _dir("PROOFFLOW_CIRCUITS", "circuits")


def bundles_root() -> Path:
    return _dir("PROOFFLOW_BUNDLES", "bundles")


def pending_dir() -> Path:
    return _dir("PROOFFLOW_PENDING", "pending")


def reports_root() -> Path:
    return _dir("PROOFFLOW_REPORTS", "reports")


def local_airflow_home() -> Path:
    return _dir("PROOFFLOW_AIRFLOW_HOME", "airflow")


def dags_folder() -> Path:
    """The DAG files: PROOFFLOW_DAGS_FOLDER, else the source tree's dags/."""
    return Path(_get("PROOFFLOW_DAGS_FOLDER")) if _get("PROOFFLOW_DAGS_FOLDER") else \
        Path(__file__).resolve().parents[1] / "dags"


def cache_root() -> Path:
    if _get("PROOFFLOW_CACHE"):
        return Path(_get("PROOFFLOW_CACHE"))
    return Path(_get("XDG_CACHE_HOME") or Path.home() / ".cache") / "proofflow"


def runtime_dir() -> Path:
    """Short enough for a Unix socket path, private to the user, one per proofflow home."""
    if _get("PROOFFLOW_RUNTIME"):
        return Path(_get("PROOFFLOW_RUNTIME"))
    # one per home and shared staging: a service only sees the segments of its staging
    key = f"{home().absolute()}\0{shared_staging_dir().absolute()}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:10]
    return Path(f"/tmp/proofflow-{os.getuid()}") / digest


def kernel_dir() -> Path:
    """The compiled GPU kernels (cubins, proofflow/prover/device/cache.py)."""
    return Path(_get("PROOFFLOW_KERNEL_DIR")) if _get("PROOFFLOW_KERNEL_DIR") else cache_root() / "kernels"


def cuda_archs() -> list[str]:
    """PROOFFLOW_CUDA_ARCHS as written, one entry per comma or space (empty: unset)."""
    return [a for a in (_get("PROOFFLOW_CUDA_ARCHS") or "").replace(",", " ").split() if a]


def c_compiler() -> str | None:
    return _get("CC")


# -- the timing store --------------------------------------------------------------------
def db_url() -> str | None:
    """PROOFFLOW_DB_URL, or None (then the connection or the SQLite default)."""
    return _get("PROOFFLOW_DB_URL")


def default_db_url() -> str:
    return f"sqlite:///{home() / 'timing.db'}"


def db_retry_s() -> float:
    return _float("PROOFFLOW_DB_RETRY_S", 60)


# -- devices and the prover service ----------------------------------------------------------
def gpu_service_enabled() -> bool:
    return (_get("PROOFFLOW_GPU_SERVICE") or "1").strip().lower() not in ("0", "false", "no", "off")


def preload_enabled() -> bool:
    return _switch("PROOFFLOW_PRELOAD", default=True)


def gpu_depth() -> int:
    depth = int(_get("PROOFFLOW_GPU_DEPTH") or 4)
    if depth < 1:
        raise ValueError(f"PROOFFLOW_GPU_DEPTH must be >= 1, got {depth}")
    return depth


def gpu_slots() -> int | None:
    return max(1, int(_get("PROOFFLOW_GPU_SLOTS"))) if _get("PROOFFLOW_GPU_SLOTS") else None


def cuda_visible_devices() -> str | None:
    """CUDA_VISIBLE_DEVICES as set (None: unset; '' hides every device)."""
    return os.environ.get("CUDA_VISIBLE_DEVICES")


def gpu_devices() -> list[int]:
    spec = _get("PROOFFLOW_GPU_DEVICES") or ""
    if spec.strip():
        return [int(x) for x in spec.split(",") if x.strip()]
    visible = [x for x in (cuda_visible_devices() or "").split(",") if x.strip()]
    return list(range(len(visible))) or [0]


def standin_gpu_s() -> float | None:
    v = _get("PROOFFLOW_STANDIN_GPU_S")
    return float(v) if v else None


def staging_budget() -> int:
    return int(_get("PROOFFLOW_STAGING_BUDGET") or 8 << 30)


def shared_staging_dir() -> Path:
    """Where synthesis leaves a/b/c for the device: shared memory (tmpfs), one directory per
    user and proofflow home."""
    if _get("PROOFFLOW_SHARED_STAGING"):
        return Path(_get("PROOFFLOW_SHARED_STAGING"))
    if not Path("/dev/shm").is_dir():
        return home() / "staging"
    digest = hashlib.sha256(str(home().absolute()).encode()).hexdigest()[:10]
    return Path("/dev/shm") / f"proofflow-{os.getuid()}-{digest}"


def staging_endpoint() -> str | None:
    """HOST:PORT of the GPU host's staging receiver, set on workers of other hosts: their
    syntheses stream there instead of writing the local shared staging."""
    return _get("PROOFFLOW_STAGING_ENDPOINT")


def staging_listen() -> str:
    return _get("PROOFFLOW_STAGING_LISTEN", "127.0.0.1:7017")


def staging_token() -> str | None:
    return _get("PROOFFLOW_STAGING_TOKEN")


def staging_lease_ttl_s() -> float:
    return _float("PROOFFLOW_STAGING_LEASE_TTL_S", 86400)


def staging_idle_ttl_s() -> float:
    return _float("PROOFFLOW_STAGING_IDLE_TTL_S", 600)


def staging_timeout_s() -> float:
    return _float("PROOFFLOW_STAGING_TIMEOUT", 600)


def service_idle_s() -> float:
    return _float("PROOFFLOW_SERVICE_IDLE_S", 600)


def service_start_timeout_s() -> float:
    return _float("PROOFFLOW_SERVICE_START_TIMEOUT", 600)  # a first NVRTC compile included


def service_job_timeout_s() -> float:
    return _float("PROOFFLOW_SERVICE_JOB_TIMEOUT", 3600)


def key_budget_bytes(memory_bytes: int) -> int:
    """PROOFFLOW_KEY_BUDGET in bytes, for a device of ``memory_bytes``: an integer is bytes,
    a number in (0, 1] a fraction of the device's memory (default 0.5)."""
    raw = (_get("PROOFFLOW_KEY_BUDGET") or "0.5").strip()
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0 or (value > 1 and value != int(value)):
        raise ValueError(f"PROOFFLOW_KEY_BUDGET must be a number of bytes or a fraction in (0, 1], got {raw!r}")
    return int(value * memory_bytes) if value <= 1 else int(value)


def msm_precompute_bytes() -> int | None:
    """PROOFFLOW_MSM_PRECOMPUTE: bytes (an integer, 0 for none, the default; e.g. 16e9), or
    None for ``auto`` (``pippenger.copies_budget`` sizes them from the key budget)."""
    raw = (_get("PROOFFLOW_MSM_PRECOMPUTE") or "0").strip()
    if raw.lower() == "auto":
        return None
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf") or value != int(value):
        raise ValueError(f"PROOFFLOW_MSM_PRECOMPUTE must be a number of bytes or auto, got {raw!r}")
    return int(value)


def _switch(name: str, default: bool = False) -> bool:
    """An on/off setting, ``default`` when unset: 1/0, true/false, yes/no, on/off."""
    raw = (_get(name) or ("1" if default else "0")).strip().lower()
    if raw not in ("0", "1", "false", "true", "no", "yes", "off", "on"):
        raise ValueError(f"{name} must be 0 or 1, got {raw!r}")
    return raw in ("1", "true", "yes", "on")


def msm_overlap() -> bool:
    """PROOFFLOW_MSM_OVERLAP: whether the GPU backend runs a proof's MSMs at once (default off)."""
    return _switch("PROOFFLOW_MSM_OVERLAP")


def curve_variant(choices) -> str | None:
    """PROOFFLOW_CURVE_VARIANT, one of ``choices``; None when unset."""
    raw = _get("PROOFFLOW_CURVE_VARIANT")
    if raw is not None and raw.strip().lower() not in choices:
        raise ValueError(f"PROOFFLOW_CURVE_VARIANT must be one of {', '.join(choices)}, got {raw!r}")
    return raw and raw.strip().lower()


def msm_balanced() -> bool:
    """PROOFFLOW_MSM_BALANCED: whether GPU MSMs accumulate in balanced spans (default on: the
    H200 measured 1.07-1.38x over pieces, docs/gpu-kernels.md)."""
    return _switch("PROOFFLOW_MSM_BALANCED", default=True)


def setup_lock_path() -> Path:
    """Host-wide, shared by every proofflow home of the user: one GPU setup at a time."""
    return Path(_get("PROOFFLOW_SETUP_LOCK") or f"/tmp/proofflow-{os.getuid()}/gpu-setup.lock")


def setup_workers() -> int:
    return int(_get("PROOFFLOW_SETUP_WORKERS") or os.cpu_count() or 1)


# -- Airflow ---------------------------------------------------------------------------------
def gpu_queue() -> str:
    return _get("PROOFFLOW_GPU_QUEUE", "gpu")


def cpu_queue() -> str:
    return _get("PROOFFLOW_CPU_QUEUE", "cpu")


def worker_name() -> str | None:
    return (_get("PROOFFLOW_WORKER_NAME") or "").strip() or None


def retries() -> int:
    return int(_get("PROOFFLOW_RETRIES") or 1)


def synth_concurrency() -> int | None:
    return int(_get("PROOFFLOW_SYNTH_CONCURRENCY")) if _get("PROOFFLOW_SYNTH_CONCURRENCY") else None


def max_active_runs() -> int:
    return int(_get("PROOFFLOW_MAX_ACTIVE_RUNS") or 4)


def batch_cron() -> str | None:
    """proof_batch's schedule: a cron expression, or None for ``none`` (runs only when
    triggered: from the UI, the REST API or a scheduler outside Airflow)."""
    raw = (_get("PROOFFLOW_BATCH_CRON") or "*/15 * * * *").strip()
    return None if raw.lower() == "none" else raw


def airflow(name: str) -> str | None:
    """An Airflow setting from the environment (AIRFLOW_HOME, AIRFLOW__SECTION__KEY)."""
    return _get(name)


def configure_airflow(values: dict[str, str]) -> None:
    """Set Airflow's settings for this process and its children (before Airflow is imported:
    it reads its configuration at import time)."""
    os.environ.update(values)


def set_home(path: Path) -> None:
    """Fix this process's (and its children's) proofflow home, e.g. before a command sets
    AIRFLOW_HOME, so the home does not move with it."""
    os.environ["PROOFFLOW_HOME"] = str(path)


# -- checks, alerts, faults ----------------------------------------------------------------
def h2d_check(name: str) -> str | None:
    return _get(f"PROOFFLOW_H2D_{name.upper()}")


def smtp_conn_id() -> str:
    return _get("PROOFFLOW_SMTP_CONN_ID", "smtp_default")


def alert_email() -> str | None:
    return _get("PROOFFLOW_ALERT_EMAIL")


FAULT_ENV = "PROOFFLOW_FAULT"


def fault_specs() -> str:
    return _get(FAULT_ENV, "")
