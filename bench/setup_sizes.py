"""A proving key's setup as the sizes grow: its time, the QAP evaluation's share, and the
host memory of setup and of a CPU proof, the figures behind ``proofflow.prover.resources``.

    python -m bench.setup_sizes [--setup 16 18] [--qap 16 18 20 22] [--prove 12 14]
                                [--build 20 22] [--synthesis 20 22] [--circuit mimc|bits]
                                [--out bench/results/setup-sizes-cpu.json] [--update]

Each measurement runs in a fresh process (memory an earlier one freed, kept by the
allocator, would hide a later one's growth), on the circuit family of ``--circuit`` (each
row names it). ``--update`` replaces, in the --out file, the rows of the kinds measured
(for that family) and keeps the others.

* setup: ``ensure_key``'s path on the CPU backend (each table written straight into
  its memory-mapped file in a fresh key directory, in PROOFFLOW_KEY_TABLES's encoding; with
  code that predates that, the key built in memory and saved, as ensure_key did), the key's
  table bytes on disk (and a domain point) and their encodings, wall seconds, CPU seconds of the process
  and of its worker processes (sampled every 0.1 s with psutil: on a shared machine the
  wall time mostly measures the other load), and ``evaluate_at`` (the QAP at tau: the
  Lagrange basis, the transposed constraint matrices and their products) apart. The
  constraint system is built (and cached) first, outside the timing. The results' "before"
  figures were taken the same way against an export of main's tree (``git archive``), each
  alternated with an "after" one.
* qap: setup with a stand-in backend whose fixed-base multiplications return zeros at once,
  so what is left is everything else setup does (evaluate_at, the query scalars, the tables'
  files): its seconds, ``evaluate_at``'s, and the peak anonymous memory (RssAnon sampled
  every 5 ms, less what the process held before) a domain point: ``resources.SETUP_HOST``;
  and that peak from the first table on (``tables_peak_anon_per_point``), what setup holds
  while the tables' files fill: ``resources.SETUP_TABLES_HOST``.
* prove: one CPU-backend proof with the key loaded memory-mapped, its peak anonymous memory
  a domain point (the key's points decoded for arkworks included): ``resources.CPU_PROVE_HOST``.
* build: the constraint system's first build and save (round constants derived on the way
  when the cache has none that far): ``resources.CS_BUILD_HOST``.
* synthesis: a partition's synthesis into a shared-memory segment as the synthesize task
  does it (``pipeline.synthesize_shared``; the segment is shared memory, not anonymous, so
  what is measured is what synthesis holds besides it): ``resources.SYNTHESIS_HOST``.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _anon() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) * 1024
    return 0


class PeakAnon:
    """The peak of RssAnon over a block, sampled, less its value at the start."""

    def __enter__(self):
        self.start = self.peak = _anon()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self):
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, _anon())

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _anon())
        self.bytes = self.peak - self.start


def _timed_evaluate_at(spans: dict):
    """Time ``r1cs_to_qap.evaluate_at`` (as setup calls it) into ``spans``; returns the undo."""
    from proofflow.prover.groth16 import r1cs_to_qap
    inner = r1cs_to_qap.evaluate_at

    def timed(cs, tau):
        t0 = time.perf_counter()
        try:
            return inner(cs, tau)
        finally:
            spans["evaluate_at_s"] = round(time.perf_counter() - t0, 3)
    r1cs_to_qap.evaluate_at = timed
    return lambda: setattr(r1cs_to_qap, "evaluate_at", inner)


def _tables_phase(phase: dict):
    """Sample the anonymous memory from the first key table on (``generator.multiples_into``'s
    first call) into ``phase["mem"]``, a PeakAnon; returns the undo."""
    from proofflow.prover.groth16 import generator
    inner = generator.multiples_into

    def sampled(*args, **kwargs):
        if "mem" not in phase:
            phase["mem"] = PeakAnon().__enter__()
        return inner(*args, **kwargs)
    generator.multiples_into = sampled
    return lambda: setattr(generator, "multiples_into", inner)


class CpuSeconds:
    """CPU seconds of this process and its descendants (the setup's worker processes) over a
    block, the descendants' sampled every 0.1 s until they end."""

    def __enter__(self):
        import psutil
        self._me, self._seen = psutil.Process(), {}
        self._start = sum(self._me.cpu_times()[:2])
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _sample(self):
        import psutil
        for child in self._me.children(recursive=True):
            try:
                t = child.cpu_times()
                self._seen[child.pid] = t.user + t.system
            except psutil.Error:
                pass

    def _run(self):
        while not self._stop.wait(0.1):
            self._sample()

    def __exit__(self, *exc):
        self._sample()
        self._stop.set()
        self._thread.join()
        self.seconds = sum(self._me.cpu_times()[:2]) - self._start + sum(self._seen.values())


class ZeroBackend:
    """A stand-in whose fixed-base multiplications cost nothing (zeros, the right shape)."""

    def fixed_base(self, curve, group, scalars, progress=None):
        import numpy as np
        from proofflow.prover.points import PointTable
        if progress:
            progress(len(scalars))
        return PointTable(curve, group, np.zeros((len(scalars), curve.xy_bytes(group)), dtype=np.uint8))


def _setup_once(circuit, backend, root: Path) -> dict:
    from proofflow.prover import files
    from proofflow.prover.groth16 import generator
    log2 = circuit.log2
    circuit.constraint_system  # noqa: B018 - built and cached outside the timing
    spans: dict = {"log2": log2, "n": circuit.domain_size}
    restore = _timed_evaluate_at(spans)
    phase: dict = {}
    unsample = _tables_phase(phase)
    streamed = "directory" in generator.setup.__code__.co_varnames
    try:
        with PeakAnon() as mem, CpuSeconds() as cpu:
            t0 = time.perf_counter()
            with files.atomic_dir(root / f"key-{log2}") as tmp:
                if streamed:
                    generator.setup(circuit, 1, backend=backend, directory=tmp).save(tmp)
                else:  # code that predates streaming: in memory, then saved
                    generator.setup(circuit, 1, backend=backend).save(tmp)
            spans["setup_s"] = round(time.perf_counter() - t0, 3)
    finally:
        restore()
        unsample()
    key = root / f"key-{log2}"
    spans["key_table_bytes"] = sum(p.stat().st_size for p in key.glob("*.npy"))  # the key's tables on disk
    spans["key_bytes_per_point"] = round(spans["key_table_bytes"] / circuit.domain_size, 1)
    params = json.loads((key / "params.json").read_text())
    spans["key_encodings"] = sorted({t.get("encoding", "xy") for t in params["tables"].values()})
    spans["streamed"], spans["cpu_s"] = streamed, round(cpu.seconds, 2)
    spans["peak_anon_bytes"] = mem.bytes
    spans["peak_anon_per_point"] = round(mem.bytes / circuit.domain_size, 1)
    if "mem" in phase:
        phase["mem"].__exit__(None, None, None)
        spans["tables_peak_anon_per_point"] = round((phase["mem"].peak - mem.start) / circuit.domain_size, 1)
    files.remove_tree(root / f"key-{log2}")
    return spans


def bench_prove(circuit, root: Path) -> dict:
    from proofflow.prover import pipeline
    from proofflow.prover.keys import Key, ensure_key
    from proofflow.prover.backend.by_name import get_backend
    from proofflow.prover.groth16.data_structures import ProvingKey
    from proofflow.prover.staging.pool import StagingPool
    log2 = circuit.log2
    d = root / f"key-{log2}"
    ensure_key(d, circuit.name, log2, 1, backend="cpu")  # made by an earlier process ("key") when run by main
    n = circuit.domain_size
    pool = StagingPool(pipeline.segment_bytes(n, circuit.num_variables) * 2, pinned=False)
    with PeakAnon() as mem:
        t0 = time.perf_counter()
        key = Key(ProvingKey.load(d, verify_digests=False), circuit.constraint_system)
        with pipeline.synthesize(circuit, 1, 0, pool) as staged:
            pipeline.prove(key, staged, get_backend("cpu"))
        seconds = time.perf_counter() - t0
    return {"log2": log2, "n": n, "prove_s": round(seconds, 3), "peak_anon_bytes": mem.bytes,
            "peak_anon_per_point": round(mem.bytes / n, 1)}


def bench_build(circuit, root: Path) -> dict:
    """The constraint system built (as on a machine's first setup of the size) and saved."""
    from proofflow.prover import constraint_files
    log2, n = circuit.log2, circuit.domain_size
    with PeakAnon() as mem:
        t0 = time.perf_counter()
        constraint_files.save(circuit._build(), root / f"cs-{log2}")
        seconds = time.perf_counter() - t0
    return {"log2": log2, "n": n, "build_s": round(seconds, 3), "peak_anon_bytes": mem.bytes,
            "peak_anon_per_point": round(mem.bytes / n, 1)}


def bench_synthesis(circuit, root: Path) -> dict:
    """A partition's synthesis as the Airflow synthesize task does it (``synthesize_shared``),
    into shared staging in /dev/shm."""
    from proofflow.prover import pipeline
    from proofflow.prover.staging.segment import abc_bytes
    from proofflow.prover.staging.shared import SharedStaging
    log2, n = circuit.log2, circuit.domain_size
    circuit.constraint_system  # noqa: B018 - cached, mapped
    with tempfile.TemporaryDirectory(dir="/dev/shm") as shm:
        staging = SharedStaging(Path(shm), 2 * abc_bytes(n) + 64 * n)
        with PeakAnon() as mem:
            t0 = time.perf_counter()
            pipeline.synthesize_shared(circuit, 1, 0, staging, "bench/setup_sizes/p0000")
            seconds = time.perf_counter() - t0
    return {"log2": log2, "n": n, "synthesis_s": round(seconds, 3), "peak_anon_bytes": mem.bytes,
            "peak_anon_per_point": round(mem.bytes / n, 1)}


KINDS = ("build", "synthesis", "qap", "prove", "setup")


def measure(kind: str, name: str, log2: int, root: Path) -> dict:
    """One measurement of circuit family ``name``, in this process."""
    from proofflow.prover.circuits.by_name import get_circuit
    circuit = get_circuit(name, log2)
    if kind == "build":
        return bench_build(circuit, root)
    if kind == "synthesis":
        return bench_synthesis(circuit, root)
    if kind == "qap":
        return _setup_once(circuit, ZeroBackend(), root)
    if kind == "prove":
        return bench_prove(circuit, root)
    if kind == "key":  # the key a proof measurement uses, made in a process of its own
        from proofflow.prover.keys import ensure_key
        ensure_key(root / f"key-{log2}", name, log2, 1, backend="cpu")
        return {}
    return _setup_once(circuit, None, root)


def _fresh(kind: str, name: str, log2: int, root: Path) -> dict:
    """One measurement in a fresh process: memory freed by an earlier one and kept by the
    allocator would otherwise hide a later one's growth."""
    out = subprocess.run([sys.executable, "-m", "bench.setup_sizes", "--one", kind, name, str(log2), "--root",
                          str(root)], cwd=HERE.parent, capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(f"{kind} {name} 2^{log2} failed: {out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.setup_sizes", description=__doc__.split("\n\n")[0])
    p.add_argument("--setup", type=int, nargs="*", default=[16, 18])
    p.add_argument("--qap", type=int, nargs="*", default=[16, 18, 20, 22])
    p.add_argument("--prove", type=int, nargs="*", default=[12, 14])
    p.add_argument("--build", type=int, nargs="*", default=[20, 22])
    p.add_argument("--synthesis", type=int, nargs="*", default=[20, 22])
    p.add_argument("--circuit", choices=("mimc", "bits"), default="mimc", help="the circuit family measured")
    p.add_argument("--out", default=str(HERE / "results" / "setup-sizes-cpu.json"))
    p.add_argument("--update", action="store_true",
                   help="replace the measured kinds' rows of this family in --out, keep the rest")
    p.add_argument("--one", nargs=3, metavar=("KIND", "CIRCUIT", "LOG2"), help=argparse.SUPPRESS)
    p.add_argument("--root", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.one:
        print(json.dumps(measure(args.one[0], args.one[1], int(args.one[2]), Path(args.root))), flush=True)
        return 0
    from bench._env import environment
    env = environment()
    result: dict = {"environment": env, **{kind: [] for kind in KINDS}}
    if args.update and Path(args.out).exists():
        result = json.loads(Path(args.out).read_text())
    with tempfile.TemporaryDirectory(prefix="proofflow-setup-sizes-") as tmp:
        root = Path(tmp)
        for kind in KINDS:
            sizes = getattr(args, kind)
            if sizes:  # rows of other families (those before --circuit: mimc) stay
                result[kind] = [r for r in result.get(kind, []) if r.get("circuit", "mimc") != args.circuit]
            for log2 in sizes:
                if kind == "prove":
                    _fresh("key", args.circuit, log2, root)
                r = {"circuit": args.circuit, **_fresh(kind, args.circuit, log2, root), "date": env["date"]}
                result[kind].append(r)
                print(f"{kind} {args.circuit} 2^{log2}: {r}", flush=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
