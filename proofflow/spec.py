"""The domains of a proof run's parameters, defined once: the command lines, the engine,
the DAG's Params (trigger form) and its ``validate`` task all use these. Light: it imports
nothing above ``settings`` (the GPU check of ``validate`` and the fit to the machine's
resources are callables passed in; registered circuits are read from their circuit.json files)."""
from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass
from enum import StrEnum
from pathlib import Path
from typing import Callable, Sequence

from proofflow import settings

CIRCUITS = ("mimc", "bits")
# The engine's registered curves by name (proofflow.prover.curves.registry, which spec must
# not import: tests/prover/test_curves.py checks they agree); the first is the built-in
# circuits' default. A run that names no curve takes its registered circuit's (circuit.json).
CURVES = ("bls12_381", "bn254")
DEFAULT_CURVE = CURVES[0]
MIN_LOG2, MAX_LOG2 = 8, 27  # up to 2^27 where the machine has room (proofflow.prover.resources)
MIN_PARTITIONS, MAX_PARTITIONS = 1, 64
MAX_PARTITIONS_PER_TASK = MAX_PARTITIONS
BACKENDS = ("auto", "cpu", "gpu")


class MemoryKind(StrEnum):
    """The host memory a partition's a/b/c and witness live in, from the trigger form to the
    timing rows."""
    PINNED = "pinned"  # page-locked: the device copies it by DMA at line rate
    PAGEABLE = "pageable"  # the driver stages every copy through a bounce buffer
    MIXED = "mixed"  # a transfer summed over buffers of both kinds (the timing store only)

    @classmethod
    def choices(cls) -> tuple[str, ...]:
        """What a run may ask for."""
        return (cls.PINNED.value, cls.PAGEABLE.value)

    @classmethod
    def effective(cls, requested, backend: str) -> "MemoryKind":
        """What memory a request really gets: page-locked only where a GPU pins it (the CPU
        backend has no page-locked memory, so a request for it is pageable there)."""
        kind = cls(requested)
        return kind if backend == "gpu" else cls.PAGEABLE


STAGING = MemoryKind.choices()


class Priority(StrEnum):
    """A run's priority, from the trigger form to the prover service's queue: a run of a
    higher one has its tasks scheduled first by Airflow (``weight``) and its partitions proved
    first by the device's service (``rank``), in arrival order within a priority."""
    HIGH = "high"
    NORMAL = "normal"
    LOW = "low"

    @property
    def rank(self) -> int:
        """The service's queue order: lower first."""
        return _RANKS[self]

    @property
    def weight(self) -> int:
        """What the run adds to each of its tasks' Airflow priority_weight: a band apart
        from the next priority's, wider than a proof_run task's own weight (its upstream
        tasks' count), so the task order within a run stays."""
        return (1 - _RANKS[self]) * 1000


_RANKS = {Priority.HIGH: 0, Priority.NORMAL: 1, Priority.LOW: 2}
PRIORITIES = tuple(p.value for p in Priority)
MAX_SEED = (1 << 63) - 1  # the timing store keeps it in a 64-bit column

DEFAULTS = {"circuit": "mimc", "log2": 10, "curve": None, "partitions": 4, "backend": "auto", "staging": "pinned",
            "seed": 0, "inputs": None, "priority": Priority.NORMAL.value, "request_id": None,
            "partitions_per_task": 1}
CIRCUIT_NAME = re.compile(r"[a-z][a-z0-9_-]{0,62}")
# A client's idempotency key: a second run of the same request returns the first one
# (``proofflow.timing.requests``); a UUID, a hash or a name of the client's ("batch-7:42").
REQUEST_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
INPUT_SUFFIXES = (".json", ".wtns")  # an input.json for the circuit's .wasm, or a ready witness


class InvalidParams(ValueError):
    pass


class InvalidInput(InvalidParams):
    """A run's input whose content the circuit cannot take (``validate``'s check, before any
    work): ``input`` is it (a file's path, or an input object), ``partition`` its place in
    the run."""

    def __init__(self, message: str, partition: int, input):
        super().__init__(message)
        self.partition, self.input = partition, input


@dataclass(frozen=True)
class RunFailure:
    """Why a proof run failed, as its failing task saw it: recorded in the timing store's
    ``runs`` row (columns failed_task, failed_map_index, failed_input, error), printed by
    ``proofflow run``, shown by the report. ``map_index``: the partition (None: a task of the
    whole run); ``input``: the partition's input file relative to its input root, or
    "inline" for an input object (None: a built-in circuit's, or none)."""
    task_id: str
    message: str
    map_index: int | None = None
    input: str | None = None

    def line(self) -> str:
        """The one line a user reads: where it failed, then why."""
        where = "" if self.map_index is None else f"partition {self.map_index} "
        where += f"({self.input}) " if self.input else ""
        return f"{where}failed in {self.task_id}: {self.message}"

    def columns(self) -> dict:
        return {"failed_task": self.task_id, "failed_map_index": self.map_index, "failed_input": self.input,
                "error": self.message}

    @classmethod
    def from_row(cls, row: dict) -> "RunFailure | None":
        if not row or not row.get("failed_task"):
            return None
        return cls(row["failed_task"], row.get("error") or "", row.get("failed_map_index"), row.get("failed_input"))


def input_label(input, roots: Sequence[Path]) -> str | None:
    """How a failure and the manifest name a partition's input: a file by its path relative
    to the input root it lies in (else its name), an input object as "inline"."""
    if input is None:
        return None
    if not isinstance(input, (str, Path)):
        return "inline"
    path = Path(os.path.realpath(input))
    for root in map(os.path.realpath, roots):
        if path.is_relative_to(root):
            return str(path.relative_to(root))
    return path.name


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


def registered_circuits() -> list[str]:
    """Names of the circom circuits registered in this proofflow home (a writer's dot-named
    work directory is never one: no circuit name starts with a dot)."""
    root = settings.current().circuits_dir
    names = (p.parent.name for p in root.glob("*/circuit.json")) if root.is_dir() else ()
    return sorted(n for n in names if CIRCUIT_NAME.fullmatch(n) and n not in CIRCUITS)


def circuit_info(name: str) -> dict | None:
    """A registered circuit's circuit.json (its size, signals, files), or None."""
    if not isinstance(name, str) or not CIRCUIT_NAME.fullmatch(name) or name in CIRCUITS:
        return None
    try:
        return json.loads((settings.current().circuits_dir / name / "circuit.json").read_text())
    except (OSError, ValueError):
        return None


def check_request_id(value) -> str | None:
    if value is not None and (not isinstance(value, str) or not REQUEST_ID.fullmatch(value)):
        raise InvalidParams(f"request_id must be 1 to 128 letters, digits or . _ : - (starting with a letter or a "
                            f"digit), got {value!r}")
    return value


def check_circuit(name) -> str:
    if name not in CIRCUITS and circuit_info(name) is None:
        known = ", ".join([*CIRCUITS, *registered_circuits()])
        raise InvalidParams(f"unknown circuit {name!r}: known circuits are {known} (register one with "
                            "`proofflow circuit add`)")
    return name


def inside_input_roots(path, roots, what: str) -> Path:
    """``path``'s real path (symlinks and .. resolved), which must lie in one of ``roots``
    (theirs resolved too): a run reads input files there and nowhere else, so a run cannot
    name another file the worker may read. InvalidParams names ``what`` and the roots."""
    real = Path(os.path.realpath(path))
    if not any(real.is_relative_to(os.path.realpath(root)) for root in roots):
        raise InvalidParams(f"{what} lies outside the input roots ({', '.join(map(str, roots))}; symlinks and .. "
                            "resolved): put the input files there, or name their directory in PROOFFLOW_INPUT_ROOTS")
    return real


def resolve_inputs(inputs, info: dict, roots) -> list:
    """A registered circuit's inputs, one per partition: inline input objects, or paths of
    input files (.json for the circuit's .wasm, .wtns witnesses); a directory stands for its
    input files in name order. Paths must be absolute, lie in one of ``roots`` and exist."""
    if isinstance(inputs, str):
        d = Path(inputs)
        if not (d.is_absolute() and inside_input_roots(d, roots, f"inputs {inputs}").is_dir()):
            raise InvalidParams(f"inputs {inputs!r} must be an absolute path of a directory of input files, or a list")
        inputs = [str(p) for p in sorted(d.iterdir()) if p.suffix in INPUT_SUFFIXES]
        if not inputs:
            raise InvalidParams(f"no input files ({', '.join(INPUT_SUFFIXES)}) in {d}")
    if not isinstance(inputs, list) or not inputs:
        raise InvalidParams(f"circuit {info['name']!r} needs inputs: one per partition, a list (input objects or file "
                            "paths) or a directory of input files")
    for i, item in enumerate(inputs):
        if isinstance(item, dict):
            if not info.get("wasm"):
                raise InvalidParams(f"input {i} is an input object, but circuit {info['name']!r} was registered "
                                    "without its .wasm: give .wtns witnesses, or register the .wasm")
            continue
        if not isinstance(item, str):
            raise InvalidParams(f"input {i} must be an input object or a file path, got {type(item).__name__}")
        p = Path(item)
        if not (p.is_absolute() and inside_input_roots(p, roots, f"input {i} ({item})").is_file()) \
                or p.suffix not in INPUT_SUFFIXES:
            raise InvalidParams(f"input {i} ({item}) must be an absolute path of an existing {' or '.join(INPUT_SUFFIXES)}"
                                " file")
        if p.suffix == ".json" and not info.get("wasm"):
            raise InvalidParams(f"input {i} ({item}) is an input.json, but circuit {info['name']!r} was registered "
                                "without its .wasm")
    if len(inputs) > MAX_PARTITIONS:
        raise InvalidParams(f"{len(inputs)} inputs: at most {MAX_PARTITIONS} partitions a run")
    return inputs


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


def resolve_staging(staging: str, backend: str) -> MemoryKind:
    """The host memory a/b/c really land in (``MemoryKind.effective``), recorded so."""
    check_choice("staging", staging, STAGING)
    return MemoryKind.effective(staging, backend)


@dataclass(frozen=True)
class RunConfig:
    """A proof run as it will really run: made once by ``validate_params``, then handed from
    task to task (and to the engine) as ``to_dict``'s plain form. ``backend`` and ``staging``
    are what is used; ``*_requested`` what the form asked for."""
    circuit: str
    log2: int
    partitions: int
    backend: str  # cpu or gpu
    staging: MemoryKind
    seed: int = 0
    inputs: tuple | None = None  # a registered circuit's, one per partition: input objects or file paths
    circom: bool = False  # a registered circom circuit
    backend_requested: str | None = None
    staging_requested: MemoryKind | None = None
    curve: str = DEFAULT_CURVE  # a registered curve's name (CURVES): the circuit's, for a registered one
    priority: Priority = Priority.NORMAL
    request_id: str | None = None  # the client's idempotency key (REQUEST_ID), if it gave one
    partitions_per_task: int = 1  # the partitions one mapped chain of tasks proves, one after another

    def __post_init__(self):
        object.__setattr__(self, "staging", MemoryKind(self.staging))
        object.__setattr__(self, "priority", Priority(self.priority))
        if self.staging_requested is not None:
            object.__setattr__(self, "staging_requested", MemoryKind(self.staging_requested))
        if self.inputs is not None:
            object.__setattr__(self, "inputs", tuple(self.inputs))

    @property
    def partition_ids(self) -> list[int]:
        return list(range(self.partitions))

    @property
    def chunk_ids(self) -> list[int]:
        """What the per-partition task group is mapped over: chunks of ``partitions_per_task``
        partitions (with 1, the default, a chunk is its partition). Every task of the group
        pays Airflow's cost of a task once for its whole chunk, which small circuits need to
        keep the device busy."""
        return list(range(-(-self.partitions // self.partitions_per_task)))

    def chunk(self, chunk_id: int) -> list[int]:
        """The partitions of chunk ``chunk_id``, in order."""
        k = self.partitions_per_task
        return list(range(chunk_id * k, min((chunk_id + 1) * k, self.partitions)))

    def to_dict(self) -> dict:
        """The JSON form (XCom, run.json, logs)."""
        out = asdict(self)
        out.update(staging=self.staging.value, inputs=list(self.inputs) if self.inputs is not None else None,
                   staging_requested=self.staging_requested and self.staging_requested.value,
                   priority=self.priority.value)
        return out

    @classmethod
    def from_dict(cls, data: dict) -> "RunConfig":
        """A config ``to_dict`` wrote; anything else is refused, naming the field."""
        if not isinstance(data, dict):
            raise InvalidParams(f"a run config must be an object, got {type(data).__name__}")
        names = {f for f in cls.__dataclass_fields__}
        unknown = sorted(set(data) - names)
        if unknown:
            raise InvalidParams(f"unknown run config field(s) {', '.join(map(repr, unknown))}")
        try:
            config = cls(**data)
        except (TypeError, ValueError) as exc:
            raise InvalidParams(f"malformed run config: {exc}") from None
        for name, kind in (("circuit", str), ("log2", int), ("partitions", int), ("seed", int), ("circom", bool),
                           ("curve", str), ("partitions_per_task", int)):
            value = getattr(config, name)
            if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
                raise InvalidParams(f"run config field {name!r} must be a {kind.__name__}, got {value!r}")
        if config.curve not in CURVES:
            raise InvalidParams(f"run config curve must be one of {', '.join(CURVES)}, got {config.curve!r}")
        if config.partitions_per_task < 1:
            raise InvalidParams(f"run config partitions_per_task must be at least 1, got {config.partitions_per_task}")
        if config.backend not in ("cpu", "gpu"):
            raise InvalidParams(f"run config backend must be cpu or gpu, got {config.backend!r}")
        check_request_id(config.request_id)
        return config


def circuit_curve(name: str, info: dict | None, curve: str | None) -> str:
    """The curve a run of circuit ``name`` (``info``: its registry entry, None for a built-in
    family) is over: a registered circuit's own, which a given ``curve`` may only repeat; else
    ``curve``, the default when not given."""
    if info is None:
        return curve or DEFAULT_CURVE
    own = info.get("curve", DEFAULT_CURVE)  # its files' (circuits registered before it was recorded: the default)
    if curve in CURVES and curve != own:  # its key and constraint system are over its own
        raise InvalidParams(f"curve {curve} contradicts circuit {name!r}, which is over {own} (its files' curve): "
                            "leave the curve out to take the circuit's")
    return own


def validate_params(params: dict, gpu_available: Callable[[], bool],
                    fit_check: Callable[[RunConfig], str | None] | None = None,
                    input_check: Callable[[RunConfig], None] | None = None,
                    input_roots: Sequence[Path] | None = None) -> RunConfig:
    """The run a proof_run's params ask for, checked once; raises InvalidParams with one
    message naming every problem. A registered circuit's size and inputs decide log2 and
    partitions, and its curve the run's (a curve asked for must be it). ``gpu_available``:
    asked only when the GPU is asked for or 'auto' must choose. ``fit_check``: takes the
    config and says why the run cannot fit the machine (one message naming each number that
    fails), or None; asked last (the engine's:
    ``proofflow.prover.resources.fit_check``); None: no resource check. ``input_check``: raises
    InvalidInput for inputs the circuit refuses (the engine's:
    ``proofflow.prover.circom.inputs.check_run_inputs``); None: none. ``input_roots``: the
    directories input files must lie in; None: the settings' (``Settings.run_input_roots``)."""
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
        lambda: p["curve"] is None or check_choice("curve", p["curve"], CURVES),
        lambda: check_choice("priority", p["priority"], PRIORITIES),
        lambda: check_request_id(p["request_id"]),
        lambda: check_int("partitions_per_task", p["partitions_per_task"], 1, MAX_PARTITIONS_PER_TASK),
    ]
    for check in checks:
        try:
            check()
        except InvalidParams as exc:
            problems.append(str(exc))
    info = circuit_info(p["circuit"])
    if info is not None:  # a registered circuit: its size and the inputs decide log2 and partitions
        try:
            roots = settings.current().run_input_roots if input_roots is None else input_roots
            p["inputs"] = resolve_inputs(p["inputs"], info, roots)
            p["log2"], p["partitions"] = int(info["log2"]), len(p["inputs"])
        except InvalidParams as exc:
            problems.append(str(exc))
        try:
            p["curve"] = circuit_curve(p["circuit"], info, p["curve"])
        except InvalidParams as exc:
            problems.append(str(exc))
    elif p["inputs"] not in (None, []):
        problems.append(f"inputs are for registered circom circuits; {p['circuit']!r} makes its own")
    if problems:
        raise InvalidParams("invalid proof_run parameters: " + "; ".join(problems))
    backend = resolve_backend(p["backend"], gpu_available)
    config = RunConfig(p["circuit"], p["log2"], p["partitions"], backend, resolve_staging(p["staging"], backend),
                       p["seed"], p["inputs"] if info is not None else None, info is not None, p["backend"],
                       MemoryKind(p["staging"]), p["curve"] or DEFAULT_CURVE, Priority(p["priority"]), p["request_id"],
                       p["partitions_per_task"])
    if input_check is not None:
        input_check(config)
    if fit_check is not None and (refusal := fit_check(config)):
        raise InvalidParams(refusal)
    return config
