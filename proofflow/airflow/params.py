"""proof_run's Params: the JSON schema of each parameter (the DAG's Params, which build the
UI's trigger form), from the domains in ``proofflow.spec``; the ``validate`` task checks the
same domains again with ``spec.validate_params``."""
from __future__ import annotations

from proofflow.spec import (BACKENDS, CIRCUIT_NAME, CIRCUITS, CURVES, DEFAULT_CURVE, DEFAULTS, MAX_LOG2,
                            MAX_PARTITIONS, MAX_PARTITIONS_PER_TASK, MAX_SEED, MIN_LOG2, MIN_PARTITIONS, PRIORITIES,
                            REQUEST_ID, STAGING, registered_circuits)


def _range(lo: int, hi: int | None = None) -> dict:
    """An integer range, kept inside ``allOf``: Airflow 3.3's trigger form hands a top-level
    minimum/maximum to its number field, which silently clamps an out-of-range entry to the
    bound on blur (99 becomes a 2^27 run). Inside ``allOf`` the form takes the value as typed
    and the API refuses it with the schema's message ("99 is greater than the maximum of
    27") before any run is created. The range is also in each description, shown under the field."""
    return {"allOf": [{"minimum": lo} if hi is None else {"minimum": lo, "maximum": hi}]}


def schema() -> dict:
    """The Params' schemas. *Circuit* stays free text, so a circuit registered after the DAG
    file was parsed can be triggered at once (an enum would refuse it until the next parse);
    the form lists the circuits registered at parse time (a directory listing) in the field's
    description, always shown under it, and as its suggestions (``examples``, which Airflow
    3.3 shows only where they match what the field holds: the default hides them)."""
    registered = registered_circuits()
    listed = ", ".join(registered[:_LISTED]) + (f" and {len(registered) - _LISTED} more"
                                                 if len(registered) > _LISTED else "")
    return {"circuit": dict(type="string", pattern=f"^{CIRCUIT_NAME.pattern}$", examples=[*CIRCUITS, *registered],
                            title="Circuit",
                            description="A built-in family (mimc: a MiMC-5 encryption chain; bits: a chain of "
                                        "SHA-256-like bit gadgets, its witness mostly 0 or 1) or a circom circuit "
                                        "registered with `proofflow circuit add`. Registered: "
                                        f"{listed or 'none'}."), **SCHEMA}


_LISTED = 50  # circuits named in the description; the suggestions hold them all


SCHEMA = {
    "log2": dict(type="integer", **_range(MIN_LOG2, MAX_LOG2), title="log2 constraints",
                 description=f"Circuit size: 2^log2 constraints, an integer in {MIN_LOG2}..{MAX_LOG2}."),
    # empty (null, the form's first choice): the registered circuit's curve, else the default; the
    # 3.3 form shows an enum with null as a dropdown whose null entry is values_display's "null"
    "curve": dict(type=["null", "string"], enum=[None, *CURVES], title="Curve",
                  values_display={"null": f"the circuit's ({DEFAULT_CURVE} for the built-in families)",
                                  **{c: c for c in CURVES}},
                  description="The pairing-friendly curve the proofs are over. Leave it empty: a registered circom "
                              "circuit is over its files' curve (circom -p bn128: bn254; -p bls12381: bls12_381) "
                              f"and the built-in families default to {DEFAULT_CURVE}; a curve that contradicts "
                              "the circuit's is refused."),
    "partitions": dict(type="integer", **_range(MIN_PARTITIONS, MAX_PARTITIONS), title="Partitions",
                       description=f"Independent instances proved in this run, one mapped task chain each: "
                                   f"an integer in {MIN_PARTITIONS}..{MAX_PARTITIONS}."),
    "partitions_per_task": dict(type="integer", **_range(1, MAX_PARTITIONS_PER_TASK), title="Partitions per task",
                                description="Partitions each mapped chain of tasks proves, one after another: 1 "
                                            "gives every partition its own tasks; more cuts Airflow's cost per "
                                            "proof, which keeps the GPU busy on small circuits (2^20 and below). "
                                            f"An integer in 1..{MAX_PARTITIONS_PER_TASK}."),
    "backend": dict(type="string", enum=list(BACKENDS), title="Backend",
                    values_display={"auto": "auto: the GPU when one is visible", "cpu": "cpu",
                                    "gpu": "gpu: fails if none is visible"},
                    description="Compute backend: auto, cpu or gpu."),
    "staging": dict(type="string", enum=list(STAGING), title="Staging memory",
                    values_display={"pinned": "pinned: page-locked, fast DMA",
                                    "pageable": "pageable: plain memory, for comparison"},
                    description="Host memory for the a/b/c vectors uploaded to the GPU (the CPU backend has no "
                                "page-locked memory: its runs are pageable, and recorded so)."),
    "seed": dict(type="integer", **_range(0, MAX_SEED), title="Seed",
                 description="Seed of the test-only proving key and of the partitions' inputs: an integer in 0..2^63-1."),
    "priority": dict(type="string", enum=list(PRIORITIES), title="Priority",
                     values_display={"high": "high: before the runs of normal and low priority",
                                     "normal": "normal", "low": "low: after the others"},
                     description="The run's tasks are scheduled, and its partitions proved on the GPU, before "
                                 "those of runs of a lower priority (queued partitions of a low run are "
                                 "overtaken); in arrival order within a priority."),
    "inputs": dict(type=["null", "array", "string"], title="Inputs (circom circuits)",
                   description="For a registered circom circuit, one input per partition: a list of input objects "
                               "(input.json contents) or absolute paths of .json inputs or .wtns witnesses, or the "
                               "absolute path of a directory of them, in the workers' input roots "
                               "(PROOFFLOW_INPUT_ROOTS). Its size and the number of inputs replace log2 and "
                               "partitions. Empty for the built-in families."),
    "request_id": dict(type=["null", "string"], pattern=f"^{REQUEST_ID.pattern}$", title="Request id",
                       description="Optional idempotency key: a run whose request_id an earlier run of proof_run "
                                   "has proves nothing and points at that run (its state, its bundle). 1 to 128 "
                                   "letters, digits or . _ : -."),
}


def dag_params() -> dict:
    """The Params of proof_run, one per parameter, with its default."""
    from airflow.sdk import Param
    return {name: Param(DEFAULTS[name], **s) for name, s in schema().items()}
