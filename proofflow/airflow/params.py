"""The proof-run parameters: their JSON schema (for the DAG's Params and the trigger form)
and the checks the ``validate`` task makes before any work. Light: no ``prover`` import at
module level (a test checks CIRCUITS against ``proofflow.prover.circuits.CIRCUITS``)."""
from __future__ import annotations

CIRCUITS = ("mimc",)
MIN_LOG2, MAX_LOG2 = 8, 24
MIN_PARTITIONS, MAX_PARTITIONS = 1, 64
BACKENDS = ("auto", "cpu", "gpu")
STAGING = ("pinned", "pageable")
MAX_SEED = (1 << 63) - 1  # the timing store keeps it in a 64-bit column

DEFAULTS = {"circuit": "mimc", "log2": 10, "partitions": 4, "backend": "auto", "staging": "pinned", "seed": 0}


def _range(lo: int, hi: int | None = None) -> dict:
    """An integer range, kept inside ``allOf``: Airflow 3.3's trigger form hands a top-level
    minimum/maximum to its number field, which silently clamps an out-of-range entry to the
    bound on blur (99 becomes a 2^24 run). Inside ``allOf`` the form takes the value as typed
    and the API refuses it with the schema's message ("99 is greater than the maximum of
    24") before any run is created. The range is also in each description, shown under the field."""
    return {"allOf": [{"minimum": lo} if hi is None else {"minimum": lo, "maximum": hi}]}


SCHEMA = {
    "circuit": dict(type="string", enum=list(CIRCUITS), title="Circuit",
                    description="Circuit family to prove (MiMC-5 encryption chain)."),
    "log2": dict(type="integer", **_range(MIN_LOG2, MAX_LOG2), title="log2 constraints",
                 description=f"Circuit size: 2^log2 constraints, an integer in {MIN_LOG2}..{MAX_LOG2}."),
    "partitions": dict(type="integer", **_range(MIN_PARTITIONS, MAX_PARTITIONS), title="Partitions",
                       description=f"Independent instances proved in this run, one mapped task chain each: "
                                   f"an integer in {MIN_PARTITIONS}..{MAX_PARTITIONS}."),
    "backend": dict(type="string", enum=list(BACKENDS), title="Backend",
                    values_display={"auto": "auto: the GPU when one is visible", "cpu": "cpu",
                                    "gpu": "gpu: fails if none is visible"},
                    description="Compute backend: auto, cpu or gpu."),
    "staging": dict(type="string", enum=list(STAGING), title="Staging memory",
                    values_display={"pinned": "pinned: page-locked, fast DMA",
                                    "pageable": "pageable: plain memory, for comparison"},
                    description="Host memory for the a/b/c vectors uploaded to the GPU."),
    "seed": dict(type="integer", **_range(0, MAX_SEED), title="Seed",
                 description="Seed of the test-only proving key and of the partitions' inputs: an integer in 0..2^63-1."),
}


class InvalidParams(ValueError):
    pass


def _int(name, value, lo=None, hi=None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidParams(f"{name} must be an integer, got {value!r}")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        rng = f"{lo}..{hi}" if hi is not None else f">= {lo}"
        raise InvalidParams(f"{name} must be in {rng}, got {value}")
    return value


def validate_params(params: dict, gpu_available=None) -> dict:
    """Checked, normalized config; raises InvalidParams with one clear message per problem.
    ``gpu_available``: a callable (default ``proofflow.prover.backend.gpu_available``) used only when
    the GPU backend is asked for or auto-selected."""
    p = {**DEFAULTS, **{k: v for k, v in dict(params).items() if k in DEFAULTS}}
    problems = []
    unknown = sorted(str(k) for k in dict(params) if k not in DEFAULTS)
    if unknown:  # a misspelt name would otherwise run with the default silently
        problems.append(f"unknown parameter(s) {', '.join(map(repr, unknown))}: known are {', '.join(DEFAULTS)}")

    def check(fn):
        try:
            fn()
        except InvalidParams as exc:
            problems.append(str(exc))

    def circuit():
        if p["circuit"] not in CIRCUITS:
            raise InvalidParams(f"unknown circuit {p['circuit']!r}: known circuits are {', '.join(CIRCUITS)}")

    def choice(name, options):
        def fn():
            if p[name] not in options:
                raise InvalidParams(f"{name} must be one of {', '.join(options)}, got {p[name]!r}")
        return fn

    check(circuit)
    check(lambda: _int("log2", p["log2"], MIN_LOG2, MAX_LOG2))
    check(lambda: _int("partitions", p["partitions"], MIN_PARTITIONS, MAX_PARTITIONS))
    check(lambda: _int("seed", p["seed"], 0, MAX_SEED))
    check(choice("backend", BACKENDS))
    check(choice("staging", STAGING))
    if problems:
        raise InvalidParams("invalid proof_run parameters: " + "; ".join(problems))
    if gpu_available is None:
        from proofflow.prover.backend import gpu_available
    backend = p["backend"]
    if backend == "gpu" and not gpu_available():
        raise InvalidParams("backend 'gpu' asked for, but no GPU is visible on this worker (is CuPy installed "
                            "and a device present?): trigger with backend 'cpu' or 'auto'")
    resolved = "gpu" if backend == "gpu" or (backend == "auto" and gpu_available()) else "cpu"
    return {**p, "backend_requested": backend, "backend": resolved,
            "partition_ids": list(range(p["partitions"]))}
