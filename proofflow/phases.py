"""The phases a proof's time is split into: one vocabulary for the engine's timers, the prover
service's spans, the Airflow tasks' rows and the timing store's SQL views. A timer refuses a
name outside it, so a view can never miss a phase that the code records."""
from __future__ import annotations

from enum import StrEnum


class Phase(StrEnum):
    # a task's whole attempt, and its waits before it runs
    TASK = "task"
    POOL_WAIT = "pool_wait"  # for a slot of the GPU pool (the device's mutex across tasks)
    QUEUE_WAIT = "queue_wait"  # queued by the scheduler before the executor ran it
    # the run's tasks
    VALIDATE = "validate"
    PREPARE = "prepare"
    SETUP = "setup"
    LOCK_WAIT = "lock_wait"  # for the key directory's lock
    SETUP_LOCK_WAIT = "setup_lock_wait"  # for the host's one-GPU-setup-at-a-time lock
    LOAD_CACHED = "load_cached"
    SAVE = "save"
    SYNTHESIS = "synthesis"
    WITNESS_MAP = "witness_map"
    STAGING_WAIT = "staging_wait"  # for room in the staging budget
    STREAM = "stream"  # a partition streamed to another host's staging receiver
    REGISTER = "register"  # a segment mapped and page-locked ahead of its proof
    REUSED = "reused"  # a retried attempt that found its proof (or its run's bundle) already written
    VERIFY = "verify"
    CHECK = "check"
    PUBLISH = "publish"
    MANIFEST = "manifest"
    SUMMARY = "summary"
    CLEANUP = "cleanup"
    WARM_UP = "warm_up"
    # prove_gpu, through the prover service or in-process
    SERVICE_START = "service_start"
    KEY_LOAD = "key_load"
    PREFETCH = "prefetch"  # the job's segment mapped by the service
    MUTEX_WAIT = "mutex_wait"  # for the device, inside the service
    KEY_UPLOAD = "key_upload"
    LOAD = "load"  # the in-process path's key and segment
    H2D = "h2d"
    NTT = "ntt"
    MSM = "msm"
    MSM_G2_WAIT = "msm_g2_wait"  # the host's wait for B_G2's MSM running beside the others
    ASSEMBLE = "assemble"
    FINALIZE = "finalize"
    # recorded by earlier versions; the views still count the rows they left
    LOAD_KEY = "load_key"
    D2H = "d2h"


# The device at work: a proof's transfers and kernels (its "busy" time).
DEVICE_PHASES = (Phase.H2D, Phase.NTT, Phase.MSM, Phase.D2H)
# The kernels alone: what a utilization counter such as nvidia-smi's sees; a slow (pageable)
# copy keeps the device "busy" with a transfer in flight but leaves its SMs idle.
KERNEL_PHASES = (Phase.NTT, Phase.MSM)
# prove_gpu's own phases: waits, one-time costs, device work, finishing (view phase_spans).
PROVE_PHASES = (Phase.POOL_WAIT, Phase.QUEUE_WAIT, Phase.SERVICE_START, Phase.KEY_LOAD, Phase.STAGING_WAIT,
                Phase.PREFETCH, Phase.MUTEX_WAIT, Phase.KEY_UPLOAD, Phase.LOAD_KEY, Phase.LOAD, Phase.H2D, Phase.NTT,
                Phase.MSM, Phase.D2H, Phase.MSM_G2_WAIT, Phase.ASSEMBLE, Phase.FINALIZE)


def sql_list(phases) -> str:
    """Phases as an SQL list literal for ``phase IN (...)``."""
    return "(" + ", ".join(f"'{Phase(p).value}'" for p in phases) + ")"
