"""Will a proof run fit this machine? What a run of (circuit, log2, partitions, backend,
staging) needs, estimated before any work (``estimate``), against what the machine has
(``Machine``, probed by ``probe``; tests describe their own machines), with every number
that does not fit named in one message (``check``, ``refusal``). ``fit_check`` is the check
the ``validate`` task and ``proofflow run`` hand ``spec.validate_params``, which asks it
last, so that such a run is refused before any work; ``python -m proofflow.prover setup``
checks a key's part (its disk, its setup's memory).

What is checked:

* disk where the proving key goes: its tables, from the run's curve's point widths in the
  encoding setup writes (PROOFFLOW_KEY_TABLES; ``native.compressed.row_bytes``): compressed,
  on BLS12-381 G1 48 bytes: a, b_g1, h, l; G2 96: b_g2; 288 bytes a point of the domain, 38.7
  GB at 2^27; xy-LE twice that, 77.3 GB), unless the key is there already, and the
  circuit's constraint system in the cache (PROOFFLOW_CACHE) unless it is there already in
  the cache's current format (``constraint_files``: 8.0 GB at 2^27 for the MiMC chain, with
  its round constants 9.4); together where they share a file system;
* staging: one partition's a/b/c (3 x n x 32 bytes) and witness must fit in the staging
  budget (PROOFFLOW_STAGING_BUDGET), or no synthesis could ever lease its segment; and the
  shared memory the run's segments can fill (the budget, or fewer partitions' worth, less
  what the shared staging holds already) must be free in its tmpfs (PROOFFLOW_SHARED_STAGING);
* host memory (MemAvailable): the key's setup when the key is not there yet (the
  constraint system's first build on the machine, the QAP at tau and the query scalars,
  then what setup holds while the tables go straight to their files), and the proving: the
  staging the run can fill, one partition's synthesis, and on the CPU backend the key's
  points decoded for arkworks (and its compressed tables decompressed, xy-LE in memory); both
  with the key and constraint-system files the run
  writes to a memory-backed file system (a 2^27 key in /dev/shm is 77 GB of host memory),
  which fill after setup's peaks, while its tables are written;
* the key budget, on the GPU backend: the key's resident bytes (xy-LE, whatever its files'
  encoding: the device decompresses them) within PROOFFLOW_KEY_BUDGET,
  or the prover service would refuse the key at the run's first proof, after its setup;
* device memory, on the GPU backend: the key's tables resident on the device (with their
  MSMs' precomputed copies, PROOFFLOW_MSM_PRECOMPUTE: bytes, or under ``auto`` sized from
  the device's key budget), the NTT tables, and one proof's
  working set (a/b/c, the witness, H, then each MSM's scratch under its table's plan:
  every MSM's at once with PROOFFLOW_MSM_OVERLAP), against the smallest of the devices
  this worker proves on (its total: a prover service that still holds another run's key
  and cached blocks frees them for a new one; free memory is only reported).

The per-point constants of the host and device working sets were measured (host) or
counted from the allocations of the code (device), on BLS12-381; they are estimates, not
bounds, kept close to what was seen so that a run which fits is not refused.
"""
from __future__ import annotations

import os
import shutil
import stat
from dataclasses import dataclass, replace
from pathlib import Path

from proofflow import settings, spec
from proofflow.prover.curves import registry
from proofflow.prover.curves.descriptor import Curve
from proofflow.prover.staging.segment import FR_BYTES, abc_bytes
from proofflow.spec import RunConfig

NPY_HEADER = 128  # bytes before a .npy file's data (numpy's format 1.0, as np.save writes it)
KEY_JSON = 64 << 10  # vk.json and params.json, generously (a few KB)

# Host bytes a domain point: peak anonymous memory measured with bench/setup_sizes.py on this
# code, each figure in a fresh process (bench/results/setup-sizes-cpu.json), rounded up a little:
CS_BUILD_HOST = 208  # the constraint system's first build on a machine (192-199 for the MiMC chain,
#                      151-156 for bits at 2^20-2^22; 372-376 before the builds indexed their coefficients)
SETUP_HOST = 208  # setup apart from its multiplications, the constraint system mapped from the
#                   cache: the QAP at tau (the Lagrange basis, u, v, w), the query scalars and a
#                   chunk of points on its way to its file (192-193 for the MiMC chain and for bits
#                   at 2^20-2^22)
SETUP_TABLES_HOST = 136  # of that, what setup still holds from its first table on, while the tables'
#                          files fill (128-129 for the MiMC chain, 128 for bits at 2^20-2^22)
CS_CACHE_DISK = 72  # the constraint system's files in format 2 (59.7 for the MiMC chain, 31.9 for bits;
#                    224 and 183 in format 1, bench/results/cs-cache-cpu.json) and MiMC's round constants (10.7)
SYNTHESIS_HOST = 48  # one partition's synthesis besides its segment: the witness as computed, then
#                      copied into the segment, and the witness map's temporaries (32.0 for the MiMC
#                      chain, 42.1 for bits at 2^20-2^22; into a staging buffer ~10 less)
CPU_PROVE_HOST = 2048  # a CPU-backend proof besides its staged a/b/c and witness (~2150 in all at
#                        2^12-2^14, of which 128 the staging buffer): the key's points decoded for
#                        arkworks (186 bytes a G1 point, 321 a G2 point), the MSMs' scalars, the NTTs
# Device bytes a domain point besides the key's tables, counted from the allocations of
# proofflow/prover/device (backend.py, pippenger.py, sparse.py); CuPy gives its cached blocks
# back before an allocation fails, so only live arrays count:
DEVICE_NTT_TABLES = 4 * FR_BYTES  # twiddles (n/2 each way), coset powers (n, three of them)
DEVICE_VECTORS = 5 * FR_BYTES  # a/b/c, the witness and H, through the proof
DEVICE_H_EVALS = 3 * FR_BYTES  # H's three coset evaluations, while H is computed; the MSMs'
#   scratch follows them (``msm_scratch_bytes``: 160.5 a point for B_G2 at 2^27, 198 at 2^24)


class ResourceError(ValueError):
    """A run that cannot fit this machine (the message names each number)."""


@dataclass(frozen=True)
class Disk:
    """A directory a run writes under, and its file system's free bytes (None: unknown, not
    checked). Places with the same ``fs`` (st_dev) share their free space; None: its own.
    ``memory``: the file system keeps its files in host memory (tmpfs, ramfs), so what the
    run writes there takes host memory too."""
    path: Path
    free: int | None
    fs: int | None = None
    memory: bool = False


@dataclass(frozen=True)
class Machine:
    """What this machine has for a run (``probe``; a test describes one). None: unknown,
    not checked."""
    key: Disk  # where the run's proving key goes
    shared: Disk  # the shared staging's tmpfs: the partitions' a/b/c segments
    cache: Disk  # the constraint system's cache (PROOFFLOW_CACHE)
    key_on_disk: bool  # the key is there already: no disk for it, no setup
    cs_cached: bool  # the circuit's constraint system is in the cache already
    host_available: int | None  # MemAvailable
    staging_budget: int  # PROOFFLOW_STAGING_BUDGET
    shared_held: int = 0  # bytes the shared staging holds already (leased and idle segments)
    device_total: int | None = None  # the GPU backend's device (the smallest of them)
    device_free: int | None = None
    device_name: str | None = None


@dataclass(frozen=True)
class Shape:
    """A circuit's sizes: its QAP domain, its variables (the witness), its instance
    variables; and its curve, which sizes its points."""
    n: int
    variables: int
    instance: int
    curve: Curve


@dataclass(frozen=True)
class Needs:
    """What a run needs (bytes)."""
    key_disk: int  # the proving key's files (0 when it is on disk already)
    shared: int  # shared memory the run's segments can take beyond what the staging holds
    cache_disk: int  # the constraint system's cache (0 when it is there already)
    staging: int  # one partition's a/b/c and witness
    host: int  # the peak of setup and proving
    host_setup: int  # the key's setup (0 when the key is on disk)
    host_prove: int
    host_files: int  # of those, the new key and cache files on a memory-backed file system (they stay)
    device: int | None  # the GPU backend's device (None: another backend)
    key_tables: int  # the key's tables, resident on the device on the GPU backend (with their copies)


def shape(config: RunConfig) -> Shape:
    """The run's circuit sizes: a registered circuit's from its circuit.json, a built-in
    family's from the family (without building its constraint system)."""
    info = spec.circuit_info(config.circuit) if config.circom else None
    if info is not None:
        return Shape(1 << int(info["log2"]), int(info["signals"]), int(info["public"]) + 1,
                     registry.get_curve(info.get("curve", registry.DEFAULT)))
    from proofflow.prover.circuits.by_name import get_circuit
    circuit = get_circuit(config.circuit, config.log2, config.curve)
    return Shape(circuit.domain_size, circuit.num_variables, circuit.num_public + 1, circuit.curve)


def key_table_bytes(s: Shape, encoding: str | None = None) -> int:
    """The proving key's table files in ``encoding`` (default: what setup writes,
    PROOFFLOW_KEY_TABLES): each table's points at its group's width. In "xy", also what the
    tables take resident on the device (with a .npy header each)."""
    from proofflow.prover.groth16.data_structures import PK_TABLES, table_encoding, table_points
    from proofflow.prover.native.compressed import row_bytes
    encoding = table_encoding(s.n.bit_length() - 1, encoding)
    points = table_points(s.n, s.variables, s.instance)
    return sum(points[name] * row_bytes(s.curve, group, encoding) + NPY_HEADER for name, group in PK_TABLES.items())


def _key_plans(s: Shape, device_total: int | None) -> tuple[tuple, tuple]:
    """The key's tables ((group, points) each, in PK_TABLES order) and the MSM plan a GPU
    prover on a device of ``device_total`` bytes (None: unknown) chooses for each."""
    from proofflow.prover.device import pippenger
    from proofflow.prover.groth16.data_structures import PK_TABLES, table_points
    points = table_points(s.n, s.variables, s.instance)
    tables = tuple((group, points[name]) for name, group in PK_TABLES.items())
    current = settings.current()
    budget = current.key_budget.of(device_total) if device_total else None
    return tables, pippenger.key_plans(s.curve, tables,
                                       pippenger.copies_budget(s.curve, tables, budget, current.msm_precompute))


def key_copy_bytes(s: Shape, device_total: int | None = None) -> int:
    """The precomputed copies of the key's tables a GPU prover keeps beside them."""
    from proofflow.prover.device import pippenger
    return pippenger.copy_bytes(s.curve, *_key_plans(s, device_total))


def msm_scratch_bytes(s: Shape, device_total: int | None = None) -> list[int]:
    """Device bytes each MSM of a proof (the key's tables in PK_TABLES order) allocates
    besides its table and scalars: its Pippenger's scratch under the table's plan
    (``pippenger.scratch_bytes``), and for a witness MSM its scalars' classes, a byte a
    scalar, and its scalars gathered at the rows its table kept (``device.density``: a
    table without rows at infinity gathers nothing, counted all the same; the tables are
    counted whole). Counted as if every witness were dense (a MiMC chain's): the split of a
    bit-heavy one (``sparse``) takes less, so one estimate serves both families."""
    from proofflow.prover.device import pippenger
    from proofflow.prover.groth16.data_structures import PK_TABLES
    tables, plans = _key_plans(s, device_total)
    return [pippenger.scratch_bytes(s.curve, group, n, plan) + ((1 + FR_BYTES) * n if name != "h_query" else 0)
            for name, (group, n), plan in zip(PK_TABLES, tables, plans)]


def msm_overlap_bytes(s: Shape, device_total: int | None = None) -> int:
    """Device bytes a proof's MSMs add when they run at once (PROOFFLOW_MSM_OVERLAP) beyond
    the costliest one's scratch: the others'. 0 without overlap."""
    if not settings.current().msm_overlap:
        return 0
    each = msm_scratch_bytes(s, device_total)
    return sum(each) - max(each)


def proof_device_bytes(s: Shape, device_total: int | None = None) -> int:
    """One proof's working set on the device, besides the key's and the NTT's tables."""
    each = msm_scratch_bytes(s, device_total)
    return DEVICE_VECTORS * s.n + max(DEVICE_H_EVALS * s.n, max(each)) + msm_overlap_bytes(s, device_total)


def _aligned(nbytes: int) -> int:
    """A staging segment's size: 2 MiB-aligned."""
    return -(-nbytes // (2 << 20)) * (2 << 20)


def estimate(config: RunConfig, machine: Machine, s: Shape | None = None) -> Needs:
    """What the run of ``config`` needs on ``machine``. Partitions 0: the key's setup alone."""
    s = s or shape(config)
    n, partitions = s.n, int(config.partitions or 0)
    abc, witness = abc_bytes(n), s.variables * FR_BYTES
    tables, xy = key_table_bytes(s), key_table_bytes(s, "xy")
    key_disk = 0 if machine.key_on_disk else tables + KEY_JSON
    # the segments in flight: up to the budget (a synthesis past it waits for room)
    segment = _aligned(abc + witness)
    shared = max(0, min(machine.staging_budget, partitions * segment) - machine.shared_held)
    cache = 0 if machine.cs_cached else CS_CACHE_DISK * n
    staging = abc + witness if partitions else 0
    # a key or constraint system written to tmpfs stays in host memory from its setup on: the
    # constraint system from its build, the key's tables filling after the QAP's peak
    key_files = key_disk if machine.key.memory else 0
    files = key_files + (cache if machine.cache.memory else 0)
    host_setup = 0
    if not machine.key_on_disk:
        first = max(SETUP_HOST, 0 if machine.cs_cached else CS_BUILD_HOST) * n
        host_setup = files - key_files + max(first, SETUP_TABLES_HOST * n + key_files)
    host_prove = 0
    if partitions:
        filled = min(machine.staging_budget, partitions * staging)
        from proofflow.prover.groth16.data_structures import table_encoding
        cpu = CPU_PROVE_HOST * n + (xy if table_encoding(n.bit_length() - 1) == "compressed" else 0)
        host_prove = files + filled + SYNTHESIS_HOST * n + (cpu if config.backend == "cpu" else 0)
    resident = xy + (key_copy_bytes(s, machine.device_total) if config.backend == "gpu" else 0)
    device = None
    if config.backend == "gpu" and partitions:
        device = resident + DEVICE_NTT_TABLES * n + proof_device_bytes(s, machine.device_total)
    return Needs(key_disk, shared, cache, staging, max(host_setup, host_prove), host_setup, host_prove, files,
                 device, resident)


def _gb(x: int) -> str:
    return f"{x / 1e12:.1f} TB" if x >= 1e12 else f"{x / 1e9:.1f} GB" if x >= 1e9 else f"{x / 1e6:.1f} MB"


def _gib(x: int) -> str:
    return f"{x / (1 << 30):.1f} GiB" if x >= 1 << 30 else f"{x / (1 << 20):.1f} MiB"


def check(config: RunConfig, machine: Machine, s: Shape | None = None) -> list[str]:
    """Each way the run does not fit ``machine``, with its numbers; [] when it fits."""
    need = estimate(config, machine, s)
    problems = []
    parts = config.partitions
    # (where, bytes, said alone, said beside the others on its file system)
    items = [(machine.key, need.key_disk, f"the proving key needs {_gb(need.key_disk)}",
              f"the proving key ({_gb(need.key_disk)})"),
             (machine.cache, need.cache_disk, f"the constraint system's cache needs {_gb(need.cache_disk)}",
              f"the constraint system's cache ({_gb(need.cache_disk)})")]
    groups: dict = {}
    for i, item in enumerate(items):
        if item[1]:
            groups.setdefault(item[0].fs if item[0].fs is not None else -1 - i, []).append(item)
    for group in groups.values():
        disk, nbytes = group[0][0], sum(item[1] for item in group)
        if disk.free is None or nbytes <= disk.free:
            continue
        if len(group) == 1:
            what = group[0][2]
        else:
            said = [item[3] for item in group]
            what = ", ".join(said[:-1]) + f" and {said[-1]} need {_gb(nbytes)}"
        problems.append(f"{what} on disk at {disk.path} ({_gb(disk.free)} free)")
    if machine.shared.free is not None and need.shared > machine.shared.free:
        problems.append(f"the partitions' a/b/c segments need {_gib(need.shared)} of shared memory at "
                        f"{machine.shared.path} ({_gib(machine.shared.free)} free; {parts} partitions, budget "
                        f"{_gib(machine.staging_budget)})")
    if need.staging > machine.staging_budget:
        problems.append(f"a partition's a/b/c and witness need {_gib(need.staging)} of staging "
                        f"(budget {_gib(machine.staging_budget)}, PROOFFLOW_STAGING_BUDGET)")
    elif (k := min(config.partitions_per_task, parts)) > 1 and k * _aligned(need.staging) > machine.staging_budget:
        # a task synthesizes its whole chunk before the device frees any of it
        problems.append(f"a task's {k} partitions (partitions_per_task) hold {_gib(k * _aligned(need.staging))} of "
                        f"staging at once (budget {_gib(machine.staging_budget)}, PROOFFLOW_STAGING_BUDGET): give "
                        "fewer partitions per task")
    if machine.host_available is not None and need.host > machine.host_available:
        over = [(what, nb) for what, nb in (("the key's setup", need.host_setup), ("proving", need.host_prove))
                if nb > machine.host_available]
        what = " and ".join(f"{what}{' needs' if i == 0 else ''} about {_gib(nb)}" for i, (what, nb) in enumerate(over))
        files = (f"; with the new files on memory-backed file systems ({_gib(need.host_files)}: "
                 f"{', '.join(str(d.path) for d in (machine.key, machine.cache) if d.memory)})" if need.host_files else "")
        problems.append(f"{what} of host memory ({_gib(machine.host_available)} available, MemAvailable{files})")
    if need.device is not None and machine.device_total is not None:
        budget = settings.current().key_budget.of(machine.device_total)
        if need.device > machine.device_total:
            free = f", {_gib(machine.device_free)} free" if machine.device_free is not None else ""
            problems.append(f"proving on the GPU needs about {_gib(need.device)} of device memory (the key's tables "
                            f"{_gib(need.key_tables)} and a proof's working set; {machine.device_name or 'the GPU'} "
                            f"has {_gib(machine.device_total)}{free})")
        elif need.key_tables > budget:  # the prover service would refuse the key at the run's first proof
            problems.append(f"the proving key takes {_gib(need.key_tables)} on the device, more than the prover's key "
                            f"budget of {_gib(budget)} (PROOFFLOW_KEY_BUDGET, of the device's "
                            f"{_gib(machine.device_total)}): raise PROOFFLOW_KEY_BUDGET")
    return problems


def refusal(config: RunConfig, problems: list[str]) -> str:
    """One message for a run that does not fit."""
    what = (f"circuit {config.circuit!r} (2^{config.log2})" if config.circom
            else f"log2 {config.log2}")
    return f"{what} does not fit this machine: " + "; ".join(problems)


def fit_check(config: RunConfig, machine: Machine | None = None) -> str | None:
    """Why the run of ``config`` cannot fit ``machine`` (this one, probed, when None), in one
    message; None when it fits."""
    problems = check(config, machine if machine is not None else probe(config))
    return refusal(config, problems) if problems else None


# -- probing this machine --------------------------------------------------------------------
def mem_available(meminfo: str = "/proc/meminfo") -> int | None:
    """MemAvailable in bytes, or None where the kernel does not say (not Linux)."""
    try:
        with open(meminfo) as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _existing(path: Path) -> Path:
    """The path, or its nearest ancestor that exists (where it would be created)."""
    path = Path(path).absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


MEMORY_FS = {"tmpfs", "ramfs"}


def memory_backed(path: Path, mounts: str = "/proc/mounts") -> bool:
    """Whether ``path``'s file system (its longest mount point prefix) keeps files in memory."""
    path, best, kind = Path(path).resolve(), -1, None
    try:
        with open(mounts) as f:
            for line in f:
                fields = line.split()
                if len(fields) < 3:
                    continue
                point = Path(fields[1].replace("\\040", " "))
                if (path == point or point in path.parents) and len(point.parts) > best:
                    best, kind = len(point.parts), fields[2]
    except OSError:
        return False
    return kind in MEMORY_FS


def disk(path: Path) -> Disk:
    """A directory's file system: its free bytes and device (of its nearest existing
    ancestor), and whether it is memory-backed."""
    where = _existing(path)
    try:
        return Disk(Path(path), shutil.disk_usage(where).free, os.stat(where).st_dev, memory_backed(where))
    except OSError:
        return Disk(Path(path), None)


def probe(config: RunConfig, key_dir: Path | None = None) -> Machine:
    """This machine, for the run of ``config``: its key's directory (``layout.params_dir``
    unless given) and whether the key is there, whether the constraint system is cached,
    the free space of the key's and the cache's file systems (with the files of a cache in
    the format before, which its rebuild removes first) and of the shared staging's tmpfs
    (and what it holds), MemAvailable, the staging budget, and on the GPU backend the
    device's memory."""
    from proofflow.prover import constraint_files, layout
    from proofflow.prover.circuits.by_name import get_circuit
    key_dir = Path(key_dir) if key_dir is not None else layout.params_dir(config.circuit, config.log2,
                                                                           config.seed, config.curve)
    cs_dir = get_circuit(config.circuit, config.log2, config.curve).constraint_system_dir
    device_total = device_free = device_name = None
    if config.backend == "gpu":
        from proofflow.prover import device
        seen = [(m, i) for i in settings.current().gpu_devices if (m := device.memory(i)) is not None]
        if seen:
            (device_free, device_total), index = min(seen, key=lambda x: x[0][1])
            device_name = device.name(index)
    from proofflow.prover.staging.shared import SharedStaging
    shared_dir = settings.current().shared_staging_dir
    held = SharedStaging(shared_dir, 1).held_bytes() if shared_dir.exists() else 0
    key, cache, version = disk(key_dir), disk(cs_dir), constraint_files.version(cs_dir)
    if version == 1 and cache.free is not None:  # 30 GB at 2^27, freed before the rebuild
        stale = sum(st.st_size for st in (p.lstat() for p in cs_dir.iterdir()) if stat.S_ISREG(st.st_mode))
        cache = replace(cache, free=cache.free + stale)
        if key.fs == cache.fs and key.free is not None:
            key = replace(key, free=key.free + stale)
    return Machine(key=key, shared=disk(shared_dir), shared_held=held, cache=cache,
                   key_on_disk=(key_dir / "params.json").exists(), cs_cached=version == constraint_files.VERSION,
                   host_available=mem_available(), staging_budget=settings.current().staging_budget,
                   device_total=device_total, device_free=device_free, device_name=device_name)
