"""A proving key's setup as the sizes grow: its time, the QAP evaluation's share, and the
host memory of setup and of a CPU proof, the figures behind ``proofflow.resources``.

    python -m bench.setup_sizes [--setup 16 18] [--qap 16 18 20 22] [--prove 12 14]
                                [--build 20 22] [--synthesis 20 22]
                                [--out bench/results/setup-sizes-cpu.json]

Each measurement runs in a fresh process (memory an earlier one freed, kept by the
allocator, would hide a later one's growth).

* setup: ``pipeline.ensure_key``'s path on the CPU backend (each table written straight into
  its memory-mapped file in a fresh key directory; with code that predates that, the key
  built in memory and saved, as ensure_key did), wall seconds, CPU seconds of the process
  and of its worker processes (sampled every 0.1 s with psutil: on a shared machine the
  wall time mostly measures the other load), and ``evaluate_at`` (the QAP at tau: the
  Lagrange basis, the transposed constraint matrices and their products) apart. The
  constraint system is built (and cached) first, outside the timing. The results' "before"
  figures were taken the same way against an export of main's tree (``git archive``), each
  alternated with an "after" one.
* qap: setup with a stand-in backend whose fixed-base multiplications return zeros at once,
  so what is left is everything else setup does (evaluate_at, the query scalars, the tables'
  files): its seconds, ``evaluate_at``'s, and the peak anonymous memory (RssAnon sampled
  every 5 ms, less what the process held before) a domain point: ``resources.SETUP_HOST``.
* prove: one CPU-backend proof with the key loaded memory-mapped, its peak anonymous memory
  a domain point (the key's points decoded for arkworks included): ``resources.CPU_PROVE_HOST``.
* build: the constraint system's first build and save (round constants derived on the way
  when the cache has none that far): ``resources.CS_BUILD_HOST``.
* synthesis: a partition's synthesis to files as the synthesize task does it
  (``pipeline.synthesize_to``): ``resources.SYNTHESIS_HOST``.
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

    def fixed_base(self, group, scalars, progress=None):
        import numpy as np
        from proofflow.prover import curve
        if progress:
            progress(len(scalars))
        return curve.PointTable(group, np.zeros((len(scalars), curve.XY_BYTES[group]), dtype=np.uint8))


def _setup_once(log2: int, backend, root: Path) -> dict:
    from proofflow.prover import files
    from proofflow.prover.circuits.mimc import MimcChain
    from proofflow.prover.groth16 import generator
    circuit = MimcChain(log2)
    circuit.constraint_system  # noqa: B018 - built and cached outside the timing
    spans: dict = {"log2": log2, "n": circuit.domain_size}
    restore = _timed_evaluate_at(spans)
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
    spans["streamed"], spans["cpu_s"] = streamed, round(cpu.seconds, 2)
    spans["peak_anon_bytes"] = mem.bytes
    spans["peak_anon_per_point"] = round(mem.bytes / circuit.domain_size, 1)
    files.remove_tree(root / f"key-{log2}")
    return spans


def bench_prove(log2: int, root: Path) -> dict:
    from proofflow.prover import pipeline
    from proofflow.prover.backend import get_backend
    from proofflow.prover.circuits.mimc import MimcChain
    from proofflow.prover.groth16.data_structures import ProvingKey
    from proofflow.prover.staging import StagingPool
    circuit = MimcChain(log2)
    d = root / f"key-{log2}"
    pipeline.ensure_key(d, "mimc", log2, 1, backend="cpu")  # made by an earlier process ("key") when run by main
    n = circuit.domain_size
    pool = StagingPool(pipeline.abc_bytes(n) * 2, pinned=False)
    with PeakAnon() as mem:
        t0 = time.perf_counter()
        key = pipeline.Key(ProvingKey.load(d, verify_digests=False), circuit.constraint_system)
        with pipeline.synthesize(circuit, 1, 0, pool) as staged:
            pipeline.prove(key, staged, get_backend("cpu"))
        seconds = time.perf_counter() - t0
    return {"log2": log2, "n": n, "prove_s": round(seconds, 3), "peak_anon_bytes": mem.bytes,
            "peak_anon_per_point": round(mem.bytes / n, 1)}


def bench_build(log2: int, root: Path) -> dict:
    """The constraint system built (as on a machine's first setup of the size) and saved."""
    from proofflow.prover.circuits.mimc import MimcChain
    circuit = MimcChain(log2)
    n = circuit.domain_size
    with PeakAnon() as mem:
        t0 = time.perf_counter()
        circuit._build().save(root / f"cs-{log2}")
        seconds = time.perf_counter() - t0
    return {"log2": log2, "n": n, "build_s": round(seconds, 3), "peak_anon_bytes": mem.bytes,
            "peak_anon_per_point": round(mem.bytes / n, 1)}


def bench_synthesis(log2: int, root: Path) -> dict:
    """A partition's synthesis as the Airflow synthesize task does it (``synthesize_to``)."""
    from proofflow.prover import pipeline
    from proofflow.prover.circuits.mimc import MimcChain
    circuit = MimcChain(log2)
    n = circuit.domain_size
    circuit.round_constants  # noqa: B018 - cached, mapped
    with PeakAnon() as mem:
        t0 = time.perf_counter()
        pipeline.synthesize_to(root / f"p-{log2}", circuit, 1, 0)
        seconds = time.perf_counter() - t0
    return {"log2": log2, "n": n, "synthesis_s": round(seconds, 3), "peak_anon_bytes": mem.bytes,
            "peak_anon_per_point": round(mem.bytes / n, 1)}


KINDS = ("build", "synthesis", "qap", "prove", "setup")


def measure(kind: str, log2: int, root: Path) -> dict:
    """One measurement, in this process."""
    if kind == "build":
        return bench_build(log2, root)
    if kind == "synthesis":
        return bench_synthesis(log2, root)
    if kind == "qap":
        return _setup_once(log2, ZeroBackend(), root)
    if kind == "prove":
        return bench_prove(log2, root)
    if kind == "key":  # the key a proof measurement uses, made in a process of its own
        from proofflow.prover import pipeline
        pipeline.ensure_key(root / f"key-{log2}", "mimc", log2, 1, backend="cpu")
        return {}
    return _setup_once(log2, None, root)


def _fresh(kind: str, log2: int, root: Path) -> dict:
    """One measurement in a fresh process: memory freed by an earlier one and kept by the
    allocator would otherwise hide a later one's growth."""
    out = subprocess.run([sys.executable, "-m", "bench.setup_sizes", "--one", kind, str(log2), "--root", str(root)],
                         cwd=HERE.parent, capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(f"{kind} 2^{log2} failed: {out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.setup_sizes", description=__doc__.split("\n\n")[0])
    p.add_argument("--setup", type=int, nargs="*", default=[16, 18])
    p.add_argument("--qap", type=int, nargs="*", default=[16, 18, 20, 22])
    p.add_argument("--prove", type=int, nargs="*", default=[12, 14])
    p.add_argument("--build", type=int, nargs="*", default=[20, 22])
    p.add_argument("--synthesis", type=int, nargs="*", default=[20, 22])
    p.add_argument("--out", default=str(HERE / "results" / "setup-sizes-cpu.json"))
    p.add_argument("--one", nargs=2, metavar=("KIND", "LOG2"), help=argparse.SUPPRESS)
    p.add_argument("--root", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.one:
        print(json.dumps(measure(args.one[0], int(args.one[1]), Path(args.root))), flush=True)
        return 0
    from bench._env import environment
    result: dict = {"environment": environment(), **{kind: [] for kind in KINDS}}
    with tempfile.TemporaryDirectory(prefix="proofflow-setup-sizes-") as tmp:
        root = Path(tmp)
        for kind in KINDS:
            for log2 in getattr(args, kind):
                if kind == "prove":
                    _fresh("key", log2, root)
                result[kind].append(r := _fresh(kind, log2, root))
                print(f"{kind} 2^{log2}: {r}", flush=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
