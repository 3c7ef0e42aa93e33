"""The domains of a proof run's parameters, defined once: the command lines, the engine,
the DAG's Params (trigger form) and its ``validate`` task all use these. Light: it imports
nothing of the engine (the GPU check of ``validate`` is a callable passed in)."""
from __future__ import annotations

CIRCUITS = ("mimc",)
MIN_LOG2, MAX_LOG2 = 8, 24
MIN_PARTITIONS, MAX_PARTITIONS = 1, 64
BACKENDS = ("auto", "cpu", "gpu")
STAGING = ("pinned", "pageable")
MAX_SEED = (1 << 63) - 1  # the timing store keeps it in a 64-bit column

DEFAULTS = {"circuit": "mimc", "log2": 10, "partitions": 4, "backend": "auto", "staging": "pinned", "seed": 0}


class InvalidParams(ValueError):
    pass


def check_int(name: str, value, lo: int | None = None, hi: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidParams(f"{name} must be an integer, got {value!r}")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        rng = f"{lo}..{hi}" if hi is not None else f">= {lo}"
        raise InvalidParams(f"{name} must be in {rng}, got {value}")
    return value


def check_choice(name: str, value, options) -> str:
    if value not in options:
        raise InvalidParams(f"{name} must be one of {', '.join(options)}, got {value!r}")
    return value


def check_circuit(name) -> str:
    if name not in CIRCUITS:
        raise InvalidParams(f"unknown circuit {name!r}: known circuits are {', '.join(CIRCUITS)}")
    return name


def resolve_backend(backend: str, gpu_available) -> str:
    """'cpu' or 'gpu' for a requested backend; ``gpu_available()`` is asked only when it matters."""
    check_choice("backend", backend, BACKENDS)
    if backend == "cpu":
        return "cpu"
    if gpu_available():
        return "gpu"
    if backend == "gpu":
        raise InvalidParams("backend 'gpu' asked for, but no GPU is visible here (is CuPy installed and a device "
                            "present?): use backend 'cpu' or 'auto'")
    return "cpu"


def resolve_staging(staging: str, backend: str) -> str:
    """The host memory a/b/c really land in: page-locked only where a GPU pins it (the CPU
    backend has no pinned memory, so a 'pinned' request is pageable there, and recorded so)."""
    check_choice("staging", staging, STAGING)
    return staging if backend == "gpu" else "pageable"


def validate_params(params: dict, gpu_available) -> dict:
    """Checked, normalized proof_run config; raises InvalidParams with one message naming
    every problem. ``gpu_available``: a callable, asked only when the GPU is asked for or
    'auto' must choose. The result has the backend and staging that will really be used,
    what was asked for (``backend_requested``, ``staging_requested``) and ``partition_ids``."""
    params = dict(params)
    p = {**DEFAULTS, **{k: v for k, v in params.items() if k in DEFAULTS}}
    problems = []
    unknown = sorted(str(k) for k in params if k not in DEFAULTS)
    if unknown:  # a misspelt name would otherwise run with the default silently
        problems.append(f"unknown parameter(s) {', '.join(map(repr, unknown))}: known are {', '.join(DEFAULTS)}")
    checks = [
        lambda: check_circuit(p["circuit"]),
        lambda: check_int("log2", p["log2"], MIN_LOG2, MAX_LOG2),
        lambda: check_int("partitions", p["partitions"], MIN_PARTITIONS, MAX_PARTITIONS),
        lambda: check_int("seed", p["seed"], 0, MAX_SEED),
        lambda: check_choice("backend", p["backend"], BACKENDS),
        lambda: check_choice("staging", p["staging"], STAGING),
    ]
    for check in checks:
        try:
            check()
        except InvalidParams as exc:
            problems.append(str(exc))
    if problems:
        raise InvalidParams("invalid proof_run parameters: " + "; ".join(problems))
    backend = resolve_backend(p["backend"], gpu_available)
    return {**p, "backend_requested": p["backend"], "backend": backend, "staging_requested": p["staging"],
            "staging": resolve_staging(p["staging"], backend), "partition_ids": list(range(p["partitions"]))}
