"""Every environment variable proofflow reads, each declared once as a field of ``Settings``
(variable, type, default, meaning), and read once per process: ``current()`` is this
process's ``Settings``, ``reload()`` makes the next ``current()`` read the environment again
(after the process changed it: ``set_home``, ``configure_airflow``). A bad value fails the
read with a message naming its variable. No other module of the product reads the
environment; docs/configuration.md is generated from the declarations
(``python -m proofflow.settings``)."""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

TIMING_CONN_ID = "proofflow_timing"
API_CONN_ID = "proofflow_airflow_api"
WEBHOOK_CONN_ID = "proofflow_webhook"
GPU_POOL = "gpu"


# -- how a variable's text becomes a value ----------------------------------------------------
@dataclass(frozen=True)
class Kind:
    """A value type: ``parse`` turns a variable's text into the value (ValueError when it
    cannot); ``name`` is the type the docs show, ``expects`` what an error says it must be."""
    name: str
    expects: str
    parse: Callable[[str], Any]


def _switch(raw: str) -> bool:
    value = raw.strip().lower()
    if value not in ("0", "1", "false", "true", "no", "yes", "off", "on"):
        raise ValueError(f"{raw!r} is not a switch: 1/0, true/false, yes/no or on/off")
    return value in ("1", "true", "yes", "on")


def _whole(raw: str) -> int:
    """A whole, non-negative number: 8589934592, or 16e9."""
    value = float(raw)
    if not 0 <= value < math.inf or value != int(value):
        raise ValueError(raw)
    return int(raw) if raw.strip().isdigit() else int(value)  # digits: exact beyond 2^53


def _directories(raw: str) -> tuple[Path, ...]:
    """One or more absolute paths, separated by ``os.pathsep`` as in PATH."""
    paths = tuple(Path(p.strip()) for p in raw.split(os.pathsep) if p.strip())
    if not paths or not all(p.is_absolute() for p in paths):
        raise ValueError(raw)
    return paths


def _at_least(low: int) -> Kind:
    def parse(raw: str) -> int:
        if (value := int(raw)) < low:
            raise ValueError(raw)
        return value
    return Kind(f"integer >= {low}", f"an integer >= {low}", parse)


def _finite_seconds(raw: str) -> float:
    """A positive, finite number of seconds (a timeout that must end)."""
    if not 0 < (value := float(raw)) < math.inf:  # NaN fails too
        raise ValueError(raw)
    return value


def _choice(*names: str) -> Kind:
    def parse(raw: str) -> str:
        if (value := raw.strip().lower()) not in names:
            raise ValueError(raw)
        return value
    return Kind(f"one of {', '.join(names)}", f"one of {', '.join(names)}", parse)


@dataclass(frozen=True)
class KeyBudget:
    """Device memory a prover service keeps proving keys resident in: a fraction of the
    memory (the device's; the host's for the CPU backend), or a number of bytes."""
    fraction: float | None = None
    nbytes: int | None = None

    def of(self, memory_bytes: int) -> int:
        """The budget in bytes on a device of ``memory_bytes``."""
        return int(self.fraction * memory_bytes) if self.fraction is not None else self.nbytes

    @classmethod
    def parse(cls, raw: str) -> "KeyBudget":
        value = float(raw)
        if not 0 < value < math.inf or (value > 1 and value != int(value)):
            raise ValueError(raw)
        return cls(fraction=value) if value <= 1 else cls(nbytes=int(value))


TEXT = Kind("text", "text", str)
TRIMMED = Kind("text", "text", str.strip)
PATH = Kind("path", "a path", Path)
INT = Kind("integer", "an integer", int)
NUMBER = Kind("number", "a number", float)
SECONDS = Kind("seconds", "a number of seconds", float)
FINITE_SECONDS = Kind("seconds > 0", "a positive, finite number of seconds", _finite_seconds)
BYTES = Kind("bytes", "a number of bytes", _whole)
SWITCH = Kind("switch", "0 or 1", _switch)
KEY_BUDGET = Kind("bytes or fraction", "a number of bytes or a fraction in (0, 1]", KeyBudget.parse)
BYTES_OR_AUTO = Kind("bytes or auto", "a number of bytes or auto",
                     lambda raw: None if raw.strip().lower() == "auto" else _whole(raw))
CRON = Kind("cron or none", "a cron expression or none",
            lambda raw: None if raw.strip().lower() == "none" else raw.strip())
DEVICES = Kind("integers, comma-separated", "device indices separated by commas",
               lambda raw: tuple(int(x) for x in raw.split(",") if x.strip()))
ARCHS = Kind("list, comma- or space-separated", "compute capabilities separated by commas or spaces",
             lambda raw: tuple(raw.replace(",", " ").split()))
DIRECTORIES = Kind("absolute paths, separated by :", "absolute paths separated by :", _directories)
CURVE_VARIANTS = ("mul32", "wide", "call")  # proofflow/prover/device/source.py's CURVE_VARIANTS
CURVE_VARIANT = Kind(f"auto or one of {', '.join(CURVE_VARIANTS)}", f"auto or one of {', '.join(CURVE_VARIANTS)}",
                     lambda raw: None if raw.strip().lower() == "auto" else _choice(*CURVE_VARIANTS).parse(raw))


# -- the declarations ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Derived:
    """A default computed from the values read before it (``value(v)``, ``v`` a namespace of
    them); ``text`` says what it is in the docs."""
    text: str
    value: Callable[[SimpleNamespace], Any]


@dataclass(frozen=True)
class Option:
    """One variable: its ``Settings`` field, type, default when unset or empty (text read as
    the variable's would be, a ``Derived`` default, or None: the field is None), meaning and
    docs section; ``blank_is_value``: an empty value is a value, not unset."""
    env: str
    kind: Kind
    default: str | Derived | None
    doc: str
    section: str
    blank_is_value: bool = False
    field: str = ""

    def read(self, environ: Mapping[str, str], before: SimpleNamespace) -> Any:
        raw = environ.get(self.env)
        if raw is None or not (raw.strip() or self.blank_is_value):
            if isinstance(self.default, Derived):
                return self.default.value(before)
            return None if self.default is None else self.kind.parse(self.default)
        try:
            return self.kind.parse(raw)
        except (ValueError, ArithmeticError):
            raise ValueError(f"{self.env} must be {self.kind.expects}, got {raw!r}") from None

    def shown_default(self) -> str:
        if isinstance(self.default, Derived):
            return self.default.text
        return "unset" if self.default is None else f"`{self.default}`"


WHERE = "Where things live"
KERNELS = "GPU kernels and MSMs"
SERVICE = "Devices and the prover service"
STAGING = "Staging"
AIRFLOW = "Airflow: queues and DAGs"
STORE = "Timing store"
CHECKS = "Checks, alerts and faults"
OTHERS = "Other programs' variables"
SECTIONS = (WHERE, KERNELS, SERVICE, STAGING, AIRFLOW, STORE, CHECKS, OTHERS)


def _opt(env: str, kind: Kind, default: str | Derived | None, doc: str, section: str, *,
         blank_is_value: bool = False, secret: bool = False):
    """A ``Settings`` field declaring variable ``env`` (``secret``: left out of the repr)."""
    option = Option(env, kind, default, " ".join(doc.split()), section, blank_is_value)
    return dataclasses.field(repr=not secret, metadata={"option": option})


def _home(v) -> Path:
    return v.airflow_home / "proofflow" if v.airflow_home else Path.home() / ".proofflow"


def _under_home(name: str) -> Derived:
    return Derived(f"`$PROOFFLOW_HOME/{name}`", lambda v: v.home / name)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def _shared_staging(v) -> Path:
    if not Path("/dev/shm").is_dir():
        return v.home / "staging"
    return Path("/dev/shm") / f"proofflow-{os.getuid()}-{_digest(str(v.home.absolute()))}"


def _runtime(v) -> Path:
    # one per home and shared staging: a service only sees the segments of its staging
    key = f"{v.home.absolute()}\0{v.shared_staging_dir.absolute()}"
    return Path(f"/tmp/proofflow-{os.getuid()}") / _digest(key)


def _visible_devices(v) -> tuple[int, ...]:
    visible = [x for x in (v.cuda_visible_devices or "").split(",") if x.strip()]
    return tuple(range(len(visible))) or (0,)


def _h2d(name: str, kind: Kind, doc: str):
    return _opt(f"PROOFFLOW_H2D_{name.upper()}", kind, None,
                f"check_h2d's {name}: {doc}; unset: the Airflow Variable proofflow_h2d_{name}, else the "
                "check's default (proofflow/timing/h2d_check.py)", CHECKS)


@dataclass(frozen=True)
class Settings:
    """The environment as proofflow reads it, typed; fields in reading order (a derived
    default uses those before it)."""

    # read first: defaults below derive from them
    airflow_home: Path | None = _opt("AIRFLOW_HOME", PATH, None, "Airflow's home; proofflow's home defaults "
                                     "inside it", OTHERS)
    xdg_cache_home: Path | None = _opt("XDG_CACHE_HOME", PATH, None, "the user's cache directory, base of "
                                       "PROOFFLOW_CACHE's default", OTHERS)
    c_compiler: str | None = _opt("CC", TEXT, None, "the C compiler of the CPU kernels "
                                  "(proofflow/prover/native); unset: cc, gcc or clang", OTHERS)
    omp_wait_policy: str = _opt(
        "OMP_WAIT_POLICY", _choice("passive", "active"), "passive",
        "how the CPU kernels' OpenMP threads wait between kernels; proofflow sets it (passive where unset) "
        "before the kernels load: active, libgomp's default, keeps each idle thread spinning for a while after "
        "every kernel, core-seconds spent on nothing (15 threads' worth on a 16-core host)", OTHERS)
    cuda_visible_devices: str | None = _opt(
        "CUDA_VISIBLE_DEVICES", TEXT, None, "the devices CUDA shows this process (empty: none); it names "
        "the prover services' sockets and gives PROOFFLOW_GPU_DEVICES's default", OTHERS, blank_is_value=True)

    home: Path = _opt("PROOFFLOW_HOME", PATH, Derived("`$AIRFLOW_HOME/proofflow` when AIRFLOW_HOME is set, "
                                                      "else `~/.proofflow`", _home),
                      "base of the default paths below (each Airflow deployment gets its own)", WHERE)
    scratch_root: Path = _opt("PROOFFLOW_SCRATCH", PATH, _under_home("scratch"), "run-scoped scratch "
                              "directories", WHERE)
    params_cache: Path = _opt("PROOFFLOW_PARAMS_CACHE", PATH, _under_home("params"), "proving keys, one "
                              "directory per (circuit, log2, seed)", WHERE)
    circuits_dir: Path = _opt("PROOFFLOW_CIRCUITS", PATH, _under_home("circuits"), "registered circom "
                              "circuits, one directory each", WHERE)
    bundles_root: Path = _opt("PROOFFLOW_BUNDLES", PATH, _under_home("bundles"), "finished proof bundles",
                              WHERE)
    pending_dir: Path = _opt("PROOFFLOW_PENDING", PATH, _under_home("pending"), "proof_batch's pending work "
                             "files", WHERE)
    input_roots: tuple[Path, ...] = _opt(
        "PROOFFLOW_INPUT_ROOTS", DIRECTORIES, Derived("`$PROOFFLOW_HOME/inputs`", lambda v: (v.home / "inputs",)),
        "the directories a run's input files (.json inputs, .wtns witnesses) must lie in, symlinks and .. "
        "resolved; proof_batch's pending directory counts too, for the work it claims. `proofflow run --inputs` "
        "links or copies its files into the first for the run", WHERE)
    json_max_bytes: int = _opt(
        "PROOFFLOW_JSON_MAX_BYTES", BYTES, "16777216", "the largest JSON file (16 MiB by default) read from a "
        "user (an input.json, a pending work file, snarkjs's public.json, proof.json or verification key, a key's "
        "params.json): a larger one is refused unread; raise it for circuits whose input.json is larger", WHERE)
    reports_root: Path = _opt("PROOFFLOW_REPORTS", PATH, _under_home("reports"), "check_h2d's results and "
                              "data docs", WHERE)
    local_airflow_home: Path = _opt("PROOFFLOW_AIRFLOW_HOME", PATH, _under_home("airflow"), "the embedded "
                                    "Airflow home of `proofflow run`", WHERE)
    dags_folder: Path = _opt("PROOFFLOW_DAGS_FOLDER", PATH, Derived(
        "the source tree's `dags/`", lambda v: Path(__file__).resolve().parents[1] / "dags"),
        "the DAG files `proofflow run` loads", WHERE)
    key_encoding: str = _opt(
        "PROOFFLOW_KEY_TABLES", _choice("auto", "compressed", "xy"), "auto",
        "how setup writes a proving key's point tables: compressed (x and flags: 48 bytes a G1 point, 96 a G2 "
        "one on BLS12-381, half of xy; the GPU decompresses them as it uploads the key, the CPU backend on "
        "first use, at ~0.3 ms of core time a domain point), xy (affine x and y, the layout of keys before "
        "compression), or auto: compressed from 2^24 (where the tables pass 9.7 GB as xy), xy below; "
        "either loads", WHERE)
    cache_root: Path = _opt("PROOFFLOW_CACHE", PATH, Derived(
        "`$XDG_CACHE_HOME/proofflow`, else `~/.cache/proofflow`",
        lambda v: (v.xdg_cache_home or Path.home() / ".cache") / "proofflow"),
        "compiled CPU kernels, constraint systems, round constants", WHERE)

    kernel_dir: Path = _opt("PROOFFLOW_KERNEL_DIR", PATH, Derived("`$PROOFFLOW_CACHE/kernels`",
                                                                  lambda v: v.cache_root / "kernels"),
                            "compiled GPU kernels, cubins (proofflow/prover/device/cache.py)", KERNELS)
    cuda_archs: tuple[str, ...] = _opt(
        "PROOFFLOW_CUDA_ARCHS", ARCHS, Derived("none: the visible device's", lambda v: ()),
        "compute capabilities `proofflow kernels build` and `proofflow setup` compile for without --arch "
        "(e.g. 90, or 80,90)", KERNELS)
    curve_variant: str | None = _opt(
        "PROOFFLOW_CURVE_VARIANT", CURVE_VARIANT, "auto",
        "the product variant of a GPU prover's curve kernels (MSMs, fixed-base, bit sums, decompression); auto: "
        "each curve's and group's fastest (call, wide for BN254's G1); all give the same values, "
        "docs/gpu-kernels.md compares their speed", KERNELS)
    msm_balanced: bool = _opt(
        "PROOFFLOW_MSM_BALANCED", SWITCH, "1", "on: a GPU prover's MSMs accumulate their buckets in balanced "
        "spans; off: in pieces of each bucket (proofflow/prover/device/pippenger.py)", KERNELS)
    msm_overlap: bool = _opt(
        "PROOFFLOW_MSM_OVERLAP", SWITCH, "0", "on: a GPU proof's independent MSMs (A, B_G1, B_G2, L, H) run at "
        "once, each on a stream of its own (proofflow/prover/device/overlap.py); their scratch then adds up, "
        "and the resource check counts it so", KERNELS)
    msm_precompute: int | None = _opt(
        "PROOFFLOW_MSM_PRECOMPUTE", BYTES_OR_AUTO, "0",
        "device bytes a GPU prover may add to each proving key for its MSMs' precomputed multiples of the "
        "key's points (0: none), or auto: half the key budget less the key's own tables, so two keys as "
        "large stay resident; counted in the key's resident bytes", KERNELS)

    gpu_service: bool = _opt(
        "PROOFFLOW_GPU_SERVICE", SWITCH, "1", "on: prove_gpu reaches the device through its long-lived "
        "prover service (proofflow/prover/service); off: in the task's own process (the naive design, kept "
        "for comparison)", SERVICE)
    groth16_service: str = _opt(
        "PROOFFLOW_GROTH16_SERVICE", _choice("auto", "on", "off"), "auto", "where `proofflow groth16 prove` and "
        "`fullprove` prove: auto: through the device's warm prover service on the GPU (started on first use, "
        "stopping after PROOFFLOW_SERVICE_IDLE_S idle), in the calling process on the CPU; on: through the "
        "service on either; off: in the calling process. Their --service and --no-service override it",
        SERVICE)
    gpu_depth: int = _opt(
        "PROOFFLOW_GPU_DEPTH", _at_least(1), "4", "prove_gpu tasks in flight per device with the service "
        "(one on the device, the next uploading, the others mapped: enough to cover Airflow's hand-off at a "
        "~1 s device phase); pool `gpu` gets devices x depth slots (1 a device in-process)", SERVICE)
    gpu_slots: int | None = _opt(
        "PROOFFLOW_GPU_SLOTS", Kind("integer", "an integer", lambda raw: max(1, int(raw))), None,
        "the pool's slots, overriding devices x depth (a deployment's sum; below 1 counts as 1); unset: "
        "devices x depth", SERVICE)
    gpu_devices: tuple[int, ...] = _opt(
        "PROOFFLOW_GPU_DEVICES", DEVICES, Derived("one per entry of CUDA_VISIBLE_DEVICES, else 0",
                                                  _visible_devices),
        "device indices this worker proves on (e.g. 0,1)", SERVICE)
    standin_gpu_s: float | None = _opt(
        "PROOFFLOW_STANDIN_GPU_S", SECONDS, None, "stretch each proof's device phase to this long (a "
        "calibrated stand-in for a GPU phase, for the pipeline benchmark); unset: no stand-in", SERVICE)
    service_idle_s: float = _opt("PROOFFLOW_SERVICE_IDLE_S", SECONDS, "600", "a prover service stops after "
                                 "this long idle", SERVICE)
    service_start_timeout_s: float = _opt("PROOFFLOW_SERVICE_START_TIMEOUT", SECONDS, "600", "how long a "
                                          "caller waits for a prover service to start (a first kernel "
                                          "compile included)", SERVICE)
    service_job_timeout_s: float = _opt("PROOFFLOW_SERVICE_JOB_TIMEOUT", SECONDS, "3600", "how long a caller "
                                        "waits for a prover service's job", SERVICE)
    key_budget: KeyBudget = _opt(
        "PROOFFLOW_KEY_BUDGET", KEY_BUDGET, "0.5", "device memory a prover service keeps proving keys "
        "resident in: bytes (a number above 1), or a fraction of the device's memory (the host's for the CPU "
        "backend); least recently used keys are evicted to fit a new one", SERVICE)
    metrics_port: int = _opt(
        "PROOFFLOW_METRICS_PORT", _at_least(0), "0", "the first port of the prover services' Prometheus metrics: "
        "device N's service serves /metrics on this port + N (workers pinned by CUDA_VISIBLE_DEVICES to different "
        "GPUs each set their own); 0: no metrics endpoint", SERVICE)
    metrics_addr: str = _opt("PROOFFLOW_METRICS_ADDR", TRIMMED, "127.0.0.1", "the address the prover services' "
                             "metrics endpoints listen on (0.0.0.0: every interface)", SERVICE)
    setup_workers: int = _opt("PROOFFLOW_SETUP_WORKERS", INT, Derived("the CPU count", lambda v: os.cpu_count() or 1),
                              "processes of the CPU setup's fixed-base multiplications", SERVICE)
    cpu_threads: int = _opt(
        "PROOFFLOW_CPU_THREADS", _at_least(1), Derived("the CPU count", lambda v: os.cpu_count() or 1),
        "threads of the CPU backend's MSMs: a proof's independent MSMs run at once and large ones are split "
        "across them (1: one after another, on one core); lower it where several CPU provers share a host",
        SERVICE)
    setup_lock_path: Path = _opt(
        "PROOFFLOW_SETUP_LOCK", PATH, Derived("`/tmp/proofflow-<uid>/gpu-setup.lock`",
                                              lambda v: Path(f"/tmp/proofflow-{os.getuid()}/gpu-setup.lock")),
        "the lock file that lets one GPU setup run at a time on a host (shared by the user's homes)", SERVICE)

    staging_budget: int = _opt(
        "PROOFFLOW_STAGING_BUDGET", BYTES, "8589934592", "bytes (8 GiB by default) of the shared staging "
        "(the partitions' a/b/c segments on a host) and of a process's own staging pool", STAGING)
    staging_timeout_s: float = _opt("PROOFFLOW_STAGING_TIMEOUT", SECONDS, "600", "how long a staging request "
                                    "waits for room before failing (on a GPU host: the longest the staging "
                                    "receiver lets a sender wait)", STAGING)
    shared_staging_dir: Path = _opt(
        "PROOFFLOW_SHARED_STAGING", PATH, Derived(
            "`/dev/shm/proofflow-<uid>-<digest of the home>` (`$PROOFFLOW_HOME/staging` without /dev/shm)",
            _shared_staging),
        "where synthesis leaves a/b/c for the device: shared memory (a tmpfs), one directory per user and "
        "home", STAGING)
    staging_lease_ttl_s: float = _opt("PROOFFLOW_STAGING_LEASE_TTL_S", SECONDS, "86400", "how long a shared "
                                      "staging segment may stay leased", STAGING)
    staging_idle_ttl_s: float = _opt("PROOFFLOW_STAGING_IDLE_TTL_S", SECONDS, "600", "how long a released "
                                     "segment is kept for reuse", STAGING)
    staging_endpoint: str | None = _opt(
        "PROOFFLOW_STAGING_ENDPOINT", TEXT, None, "HOST:PORT of the GPU host's staging receiver, set on "
        "workers of other hosts: their syntheses stream there instead of writing the local shared staging",
        STAGING)
    staging_listen: str = _opt("PROOFFLOW_STAGING_LISTEN", TEXT, "127.0.0.1:7017", "where the staging "
                               "receiver listens", STAGING)
    staging_token: str | None = _opt("PROOFFLOW_STAGING_TOKEN", TEXT, None, "the secret the staging receiver "
                                     "and its senders share (needed to listen beyond loopback)", STAGING,
                                     secret=True)
    # the staging receiver's limits (proofflow/prover/staging/receiver.py's ReceiverLimits) and TLS
    staging_header_timeout_s: float = _opt(
        "PROOFFLOW_STAGING_HEADER_TIMEOUT", FINITE_SECONDS, "10", "how long the staging receiver gives a "
        "connection to send its header (TLS handshake included) before closing it", STAGING)
    staging_idle_timeout_s: float = _opt(
        "PROOFFLOW_STAGING_IDLE_TIMEOUT", FINITE_SECONDS, "60", "how long a stream into the staging receiver may "
        "stay silent before its lease is cancelled", STAGING)
    staging_stream_timeout_s: float = _opt(
        "PROOFFLOW_STAGING_STREAM_TIMEOUT", FINITE_SECONDS, "3600", "how long a stream into the staging receiver "
        "may take in all before its lease is cancelled", STAGING)
    staging_max_pending: int = _opt(
        "PROOFFLOW_STAGING_MAX_PENDING", _at_least(1), "64", "connections the staging receiver lets wait for "
        "their header (before the token is checked); one more closes the oldest", STAGING)
    staging_max_streams: int = _opt(
        "PROOFFLOW_STAGING_MAX_STREAMS", _at_least(1), "64", "streams (senders with the token) the staging "
        "receiver takes at once, waiting for room included; more are refused", STAGING)
    staging_tls_cert: Path | None = _opt(
        "PROOFFLOW_STAGING_TLS_CERT", PATH, None, "the staging receiver's TLS certificate (PEM, with its chain); "
        "set with PROOFFLOW_STAGING_TLS_KEY, the receiver takes TLS 1.2 or later only", STAGING)
    staging_tls_key: Path | None = _opt("PROOFFLOW_STAGING_TLS_KEY", PATH, None, "the private key (PEM) of "
                                        "PROOFFLOW_STAGING_TLS_CERT", STAGING)
    staging_tls_ca: Path | None = _opt(
        "PROOFFLOW_STAGING_TLS_CA", PATH, None, "set on senders: the CA certificates (PEM) the receiver's "
        "certificate must verify against, for its host name; set, syntheses stream over TLS", STAGING)
    runtime_dir: Path = _opt(
        "PROOFFLOW_RUNTIME", PATH, Derived("`/tmp/proofflow-<uid>/<digest of the home and shared staging>`",
                                           _runtime),
        "the prover services' sockets (short enough for a Unix socket path, private to the user)", SERVICE)

    gpu_queue: str = _opt("PROOFFLOW_GPU_QUEUE", TEXT, "gpu", "the queue of the GPU host's tasks "
                          "(synthesize, stage and prove_gpu, which share its memory) under the CeleryExecutor",
                          AIRFLOW)
    cpu_queue: str = _opt("PROOFFLOW_CPU_QUEUE", TEXT, "cpu", "every other task's queue", AIRFLOW)
    worker_name: str | None = _opt("PROOFFLOW_WORKER_NAME", TRIMMED, None, "the host name a worker records "
                                   "(proofflow/airflow/worker.py); unset: the host's name", AIRFLOW)
    retries: int = _opt("PROOFFLOW_RETRIES", INT, "1", "proof_run's task retries", AIRFLOW)
    synth_concurrency: int | None = _opt("PROOFFLOW_SYNTH_CONCURRENCY", INT, None, "synthesize tasks at once "
                                         "in a run (each of partitions_per_task partitions); unset: no limit",
                                         AIRFLOW)
    max_active_runs: int = _opt("PROOFFLOW_MAX_ACTIVE_RUNS", INT, "4", "proof_run's runs at once", AIRFLOW)
    batch_cron: str | None = _opt(
        "PROOFFLOW_BATCH_CRON", CRON, "*/15 * * * *", "proof_batch's schedule; none: it runs only when "
        "triggered (the UI, the REST API or a scheduler outside Airflow)", AIRFLOW)
    preload: bool = _opt(
        "PROOFFLOW_PRELOAD", SWITCH, "1", "on: the scheduler, dag-processor and triggerer import the tasks' "
        "modules at their start, so the processes they fork inherit them (proofflow/airflow/preload.py)",
        AIRFLOW)

    db_url: str | None = _opt(
        "PROOFFLOW_DB_URL", TEXT, None, "the timing store's URL; unset: the Airflow connection "
        "proofflow_timing, else SQLite at `$PROOFFLOW_HOME/timing.db`", STORE, secret=True)
    db_retry_s: float = _opt("PROOFFLOW_DB_RETRY_S", SECONDS, "60", "how long the timing store retries a "
                             "lost database connection", STORE)

    h2d_tol: float | None = _h2d("tol", NUMBER, "how far above the expected time a transfer may take, as a "
                                 "fraction of it")
    h2d_tol_low: float | None = _h2d("tol_low", NUMBER, "how far below, a fraction in 0..1")
    h2d_floor_gbps: float | None = _h2d("floor_gbps", NUMBER, "the lowest rate allowed, GB/s")
    h2d_floor_fraction: float | None = _h2d("floor_fraction", NUMBER, "the lowest rate allowed as a fraction "
                                            "of the reference, without floor_gbps")
    h2d_slack_ms: float | None = _h2d("slack_ms", NUMBER, "milliseconds that widen the allowed range both ways")
    h2d_require_pinned: bool | None = _h2d("require_pinned", SWITCH, "also flag transfers from pageable memory")
    h2d_auto_calibrate: bool | None = _h2d("auto_calibrate", SWITCH, "calibrate a host and device that have "
                                           "no calibration stored")
    smtp_conn_id: str = _opt("PROOFFLOW_SMTP_CONN_ID", TEXT, "smtp_default", "the Airflow connection alert "
                             "e-mails go through", CHECKS)
    alert_email: str | None = _opt("PROOFFLOW_ALERT_EMAIL", TEXT, None, "where alert e-mails go; unset: the "
                                   "Airflow Variable proofflow_alert_email", CHECKS)
    fault_specs: str | None = _opt("PROOFFLOW_FAULT", TEXT, None, "fault injection for the reliability tests "
                                   "(proofflow/prover/faults.py); unset in operation", CHECKS)

    @property
    def run_input_roots(self) -> tuple[Path, ...]:
        """Where a run's input files may lie: the input roots, and proof_batch's pending
        directory, whose claimed work names its inputs there (proof_run validates it again)."""
        return (*self.input_roots, self.pending_dir)

    @property
    def default_db_url(self) -> str:
        """The timing store without PROOFFLOW_DB_URL or a connection: SQLite in the home."""
        return f"sqlite:///{self.home / 'timing.db'}"


OPTIONS: tuple[Option, ...] = tuple(dataclasses.replace(f.metadata["option"], field=f.name)
                                    for f in dataclasses.fields(Settings))


# -- reading ---------------------------------------------------------------------------------------
def load(environ: Mapping[str, str]) -> Settings:
    """``environ`` read into a ``Settings`` (ValueError naming the variable of a bad value)."""
    values = SimpleNamespace()
    for option in OPTIONS:
        setattr(values, option.field, option.read(environ, values))
    return Settings(**vars(values))


@functools.cache
def current() -> Settings:
    """This process's settings, read from its environment the first time they are asked for."""
    return load(os.environ)


def reload() -> None:
    """Forget the settings read, so the next ``current()`` reads the environment again."""
    current.cache_clear()


# a forked child (Airflow's task processes) reads its own environment, as a started one does
os.register_at_fork(after_in_child=reload)


def configure_airflow(values: dict[str, str]) -> None:
    """Set Airflow's settings for this process and its children (before Airflow is imported:
    it reads its configuration at import time)."""
    os.environ.update(values)
    reload()


def export_omp_wait_policy() -> None:
    """OMP_WAIT_POLICY as read (passive unless set) into this process's environment: OpenMP's
    runtime reads it once, when the first CPU kernel loads it (``proofflow.prover.native``)."""
    os.environ["OMP_WAIT_POLICY"] = current().omp_wait_policy


def set_home(path: Path) -> None:
    """Fix this process's (and its children's) proofflow home, e.g. before a command sets
    AIRFLOW_HOME, so the home does not move with it."""
    os.environ["PROOFFLOW_HOME"] = str(path)
    reload()


# -- the generated reference ----------------------------------------------------------------
def markdown() -> str:
    """docs/configuration.md: every variable by section, with its type, default and meaning."""
    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    out = ["# Configuration", "",
           "Generated from `proofflow/settings.py` by `python -m proofflow.settings > docs/configuration.md`;",
           "edit the declarations there, not this file. A process reads its environment once, when it",
           "first needs a setting; an empty variable counts as unset. A switch is 1 or 0 (also true/false,",
           "yes/no, on/off).", ""]
    for section in SECTIONS:
        out += [f"## {section}", "", "| Variable | Type | Default | Meaning |", "| --- | --- | --- | --- |"]
        out += [f"| `{o.env}` | {cell(o.kind.name)} | {cell(o.shown_default())} | {cell(o.doc)} |"
                for o in OPTIONS if o.section == section]
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    print(markdown(), end="")
