"""The constraint-system cache's bytes a constraint, format 1 (int64 row pointers and columns,
each term's 32-byte coefficient: what the cache held until 2026-12-06) against format 2
(``proofflow/prover/constraint_files.py``: the distinct coefficients once, each term's index
into them, every index array in its narrowest width), for the MiMC and bits chains at
2^16-2^20, projected to 2^27 beside the key's compressed tables.

    python -m bench.cs_cache [--sizes 16 18 20] [--circuits mimc bits] [--repeats 3] [--out FILE]
    python -m bench.cs_cache --scale 27 --out bench/results/cs-cache-h200-2p27.json   # a GPU host's disk


Each size's system is built once and written both ways; the format-2 files are loaded back
(memory-mapped) and every matrix checked equal to the built one, row pointers, columns and
coefficients; Mᵀ·x (setup's product, the QAP at tau) runs on the format-1 arrays and on the
format-2 ones with the same x, the results compared, in CPU seconds (one thread). The 2^27
projection is the line through the two largest sizes (bytes against constraints: past the
first sizes no array changes width up to 2^27, which the widths' check confirms), the MiMC
chain's round constants (cache/mimc, a file apart from the system, kept by both formats)
counted beside it.

``--scale L`` measures one size as a machine's first setup meets it instead: the family's
system built through the cache (``Circuit.constraint_system``, in PROOFFLOW_CACHE; format 2
only, format 1 would not fit the disk at 2^27), its files' bytes, the build's seconds and peak
anonymous memory (round constants derived on the way where the cache has none), a load's
seconds and Mᵀ·x's CPU seconds.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from bench import _env
from proofflow.prover import constraint_files, resources
from proofflow.prover.circuits.by_name import get_circuit
from proofflow.prover.r1cs import ConstraintSystem, SparseMatrix, narrow
from proofflow.spec import MemoryKind, RunConfig

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "cs-cache-cpu.json"
PROJECT_LOG2 = 27
DISK = 64 * 10**9  # the H200 host's disk (issue #38)


def write_format1(cs: ConstraintSystem, d: Path) -> None:
    """The cache as it was written before format 2 (``ConstraintSystem.save`` until 2026-12-06)."""
    d.mkdir(parents=True)
    for name in "abc":
        m = getattr(cs, name)
        np.save(d / f"{name}.indptr.npy", m.indptr.astype(np.int64), allow_pickle=False)
        np.save(d / f"{name}.indices.npy", m.indices.astype(np.int64), allow_pickle=False)
        np.save(d / f"{name}.coeffs.npy", np.ascontiguousarray(m.coeffs), allow_pickle=False)
    np.save(d / "shape.npy", np.array([cs.num_public, cs.num_variables, cs.num_constraints]))


def read_format1(cs: ConstraintSystem, d: Path) -> list[SparseMatrix]:
    return [SparseMatrix(cs.curve, cs.num_constraints, cs.num_variables,
                         *(np.load(d / f"{name}.{part}.npy", mmap_mode="r") for part in ("indptr", "indices", "coeffs")))
            for name in "abc"]


def _bytes(d: Path) -> dict:
    return {p.name: p.stat().st_size for p in sorted(d.iterdir())}


def _equal(got: SparseMatrix, want: SparseMatrix) -> bool:
    return (np.array_equal(got.indptr.astype(np.int64), want.indptr.astype(np.int64))
            and np.array_equal(got.indices.astype(np.int64), want.indices.astype(np.int64))
            and np.array_equal(got.coeffs, want.coeffs))


def _cpu_s(fn, repeats: int) -> float:
    """The median CPU seconds of ``fn()`` (the product runs on one thread: CPU time is what
    the code costs, less disturbed than wall time by the machine's other work)."""
    times = []
    for _ in range(repeats):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return round(float(np.median(times)), 4)


def size_row(name: str, log2: int, root: Path, repeats: int) -> dict:
    circuit = get_circuit(name, log2)
    built = circuit._build()
    rows = built.num_constraints
    old, new = root / f"{name}-{log2}-v1", root / f"{name}-{log2}-v2"
    write_format1(built, old)
    t0 = time.perf_counter()
    constraint_files.save(built, new)
    save_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    loaded = constraint_files.load(new, built.curve)
    load_s = time.perf_counter() - t0
    mats = [getattr(loaded, m) for m in "abc"]
    equal = all(_equal(got, getattr(built, m)) for got, m in zip(mats, "abc"))
    x = circuit.fr.random(rows, np.random.default_rng(log2))
    v1 = read_format1(built, old)
    products_equal = all(np.array_equal(a.rmatvec(x), b.rmatvec(x)) for a, b in zip(v1, mats))
    v1_bytes, v2_files = sum(_bytes(old).values()), _bytes(new)
    v2_bytes = sum(v2_files.values())
    return {"log2": log2, "constraints": rows, "nnz": [m.nnz for m in mats],
            "format1_bytes": v1_bytes, "format1_bytes_per_constraint": round(v1_bytes / rows, 2),
            "format2_bytes": v2_bytes, "format2_bytes_per_constraint": round(v2_bytes / rows, 2),
            "ratio": round(v1_bytes / v2_bytes, 2), "format2_files": v2_files,
            "widths": {m: {part: str(getattr(mat, part).dtype) for part in ("indptr", "indices", "which")
                           if getattr(mat, part) is not None} for m, mat in zip("abc", mats)},
            "distinct_values": int(mats[0].values.shape[0]) if mats[0].which is not None else None,
            "which_max": [int(m.which.max()) if m.nnz else 0 for m in mats] if mats[0].which is not None else None,
            "save_s": round(save_s, 3), "load_s": round(load_s, 4), "round_trip_equal": equal,
            "rmatvec_cpu_s": {"format1": _cpu_s(lambda: [m.rmatvec(x) for m in v1], repeats),
                              "format2": _cpu_s(lambda: [m.rmatvec(x) for m in mats], repeats)},
            "rmatvec_equal": products_equal}


def scale_row(name: str, log2: int, repeats: int) -> dict:
    from bench.setup_sizes import PeakAnon
    circuit = get_circuit(name, log2)
    d = circuit.constraint_system_dir
    shutil.rmtree(d, ignore_errors=True)
    with PeakAnon() as mem:
        t0 = time.perf_counter()
        circuit.constraint_system  # noqa: B018 - built, saved, mapped back
        build_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    cs = constraint_files.load(d, circuit.curve)
    load_s = time.perf_counter() - t0
    files, rows = _bytes(d), cs.num_constraints
    x = circuit.fr.random(rows, np.random.default_rng(log2))
    size = sum(files.values())
    return {"log2": log2, "constraints": rows, "nnz": [getattr(cs, m).nnz for m in "abc"], "format2_bytes": size,
            "format2_bytes_per_constraint": round(size / rows, 2), "format2_files": files,
            "widths": {m: {part: str(getattr(getattr(cs, m), part).dtype) for part in ("indptr", "indices", "which")
                           if getattr(getattr(cs, m), part) is not None} for m in "abc"},
            "round_constants_bytes": 32 * circuit.rounds + resources.NPY_HEADER if name == "mimc" else 0,
            "build_s": round(build_s, 1), "build_peak_anon_bytes": mem.bytes,
            "build_peak_anon_per_point": round(mem.bytes / circuit.domain_size, 1), "load_s": round(load_s, 4),
            "rmatvec_cpu_s": _cpu_s(lambda: [getattr(cs, m).rmatvec(x) for m in "abc"], repeats)}


def projection(name: str, rows: list[dict]) -> dict:
    """2^27 from the line through the two largest sizes (bytes against constraints)."""
    big = get_circuit(name, PROJECT_LOG2)
    n = big.num_constraints
    (r0, r1) = rows[-2:]
    out = {"log2": PROJECT_LOG2, "constraints": n, "from_log2": [r0["log2"], r1["log2"]]}
    for fmt in ("format1", "format2"):
        slope = (r1[f"{fmt}_bytes"] - r0[f"{fmt}_bytes"]) / (r1["constraints"] - r0["constraints"])
        total = r1[f"{fmt}_bytes"] + slope * (n - r1["constraints"])
        out[f"{fmt}_bytes"] = int(total)
        out[f"{fmt}_bytes_per_constraint"] = round(total / n, 2)
    # the widths of the largest size measured are those the 2^27 arrays need: each array's
    # largest entry grown with the circuit where it grew between the two sizes, else as it is
    scale = n / r1["constraints"]

    def at_2p27(key: str, m: int) -> int:
        small, large = r0[key][m], r1[key][m]
        return int(large * scale) if large != small else large

    need = {}
    for i, m in enumerate("abc"):
        need[m] = {"indptr": str(narrow(np.zeros(0), at_2p27("nnz", i)).dtype),
                   "indices": str(narrow(np.zeros(0), big.num_variables - 1).dtype)}
        if r1["which_max"] is not None:
            need[m]["which"] = str(narrow(np.zeros(0), at_2p27("which_max", i)).dtype)
    out["widths_hold"] = need == r1["widths"]
    out["round_constants_bytes"] = 32 * big.rounds + resources.NPY_HEADER if name == "mimc" else 0
    shape = resources.shape(RunConfig(name, PROJECT_LOG2, 0, "gpu", MemoryKind.PINNED))
    out["key_bytes_compressed"] = resources.key_table_bytes(shape, "compressed") + resources.KEY_JSON
    for fmt in ("format1", "format2"):
        disk = out[f"{fmt}_bytes"] + out["round_constants_bytes"] + out["key_bytes_compressed"]
        out[f"disk_with_key_{fmt}_bytes"] = int(disk)
        out[f"fits_64gb_{fmt}"] = disk < DISK
    return out


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[16, 18, 20])
    ap.add_argument("--circuits", nargs="+", default=["mimc", "bits"], choices=("mimc", "bits"))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--scale", type=int, help="measure this one size through the cache, format 2 only (the "
                    "other circuits' rows of --out are kept)")
    args = ap.parse_args(argv)
    if args.scale is None and len(args.sizes) < 2:
        ap.error("give at least two sizes: the projection is the line through the two largest")
    result = {"environment": {**_env.environment(), "load_average_1m": round(os.getloadavg()[0], 2)},
              "note": "bytes of the cache's files (headers included); rmatvec_cpu_s: the three matrices' M^T x in "
                      "CPU seconds, median of the repeats, both formats through the same C products; "
                      "load_average_1m: how busy the host was at the start (the 2-core CI machine runs other work)",
              "circuits": {}}
    if args.scale is not None:  # one family a process measures its build's memory alone: merged into --out
        if args.out.exists():
            result["circuits"] = json.loads(args.out.read_text())["circuits"]
        for name in args.circuits:
            result["circuits"][name] = {"at_scale": scale_row(name, args.scale, args.repeats)}
            print(f"{name} 2^{args.scale}: {result['circuits'][name]['at_scale']}", flush=True)
        _env.write(args.out, result)
        return result
    with tempfile.TemporaryDirectory(prefix="proofflow-cs-cache-") as tmp:
        for name in args.circuits:
            rows = []
            for log2 in sorted(args.sizes):
                rows.append(size_row(name, log2, Path(tmp), args.repeats))
                print(f"{name} 2^{log2}: {rows[-1]}", flush=True)
            result["circuits"][name] = {"sizes": rows, "projected": projection(name, rows)}
            print(f"{name} 2^{PROJECT_LOG2}: {result['circuits'][name]['projected']}", flush=True)
    _env.write(args.out, result)
    return result


if __name__ == "__main__":
    main()
