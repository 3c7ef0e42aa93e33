"""Witness generation of a circom circuit at size: the wasm generator's first call (compiled
then), a new process's first call (the compiled module read from the disk cache), its warm
calls, two at once on two threads, and circom's C++ generator (``circom --c``), in one run.

    python -m bench.witness [--sizes 16 18] [--repeats 5] [--out bench/results/witness-cpu.json]

The circuit is tests/circom/circuits/chain.circom with 2^k steps (2^k multiplications and
constraints) in blocks of 4096 (bench/circuits/chain_blocks.circom: the same constraints, compiled
in linear time), compiled here by circom2 (tests/circom/node_modules, ``npm ci --prefix
tests/circom``) with --r1cs --wasm --c, the C++ one built with make (g++, nasm, libgmp-dev,
nlohmann-json3-dev). Every way's witness is checked equal to the warm wasm's. Times are
witness.calculate_witness / native_witness.run_generator from the inputs object to the Fr
vector: the C++ one includes its process's start, its .dat read, and the .wtns written
and read back. A first call is timed with a fresh process cache (and, for "compiled", an
empty disk cache) each repeat; min and median of the repeats, ratios of the medians; each way's
median core-seconds too (``cpu_median_s``: this process's CPU time and its children's, the C++
program's).
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench import _env

HERE = Path(__file__).resolve().parent
CIRCOM = HERE.parent / "tests" / "circom"
INPUTS = {"x": 3, "c": 5}


def _times(fn, repeats: int, before=None) -> dict:
    xs, cpu = [], []
    for _ in range(repeats):
        if before:
            before()
        t0, c0 = time.perf_counter(), _env.cpu_seconds()
        fn()
        xs.append(time.perf_counter() - t0)
        cpu.append(_env.cpu_seconds() - c0)
    return {"min_s": round(min(xs), 4), "median_s": round(statistics.median(xs), 4), "repeats": repeats,
            "cpu_median_s": round(statistics.median(cpu), 4)}


def _compile(log2: int, out: Path) -> tuple[Path, Path, Path]:
    """(.r1cs, .wasm, C++ generator) of the chain with 2^log2 steps."""
    from proofflow.prover.circom import native_witness
    out.mkdir(parents=True)
    source = out / f"chain_{log2}.circom"
    source.write_text(f'pragma circom 2.0.0;\ninclude "chain_blocks.circom";\ncomponent main {{public [x]}} = '
                      f"ChainBlocks({1 << log2}, 4096);\n")
    # run from the repository's root: circom2 (wasm) reads only below its working directory
    subprocess.run([str(CIRCOM / "node_modules" / ".bin" / "circom2"), str(source), "--r1cs", "--wasm", "--c",
                    "-p", "bls12381", "-l", str(CIRCOM / "circuits"), "-l", str(HERE / "circuits"), "-o", str(out)],
                   cwd=HERE.parent, check=True, capture_output=True)
    return (out / f"{source.stem}.r1cs", out / f"{source.stem}_js" / f"{source.stem}.wasm",
            native_witness.build(out / f"{source.stem}_cpp"))


def bench_size(log2: int, repeats: int, work: Path) -> dict:
    from proofflow.prover.circom import native_witness, read_r1cs, witness
    from proofflow.prover.curves.bls12_381 import BLS12_381
    from proofflow.prover.field.fr import Fr
    fr = Fr.of(BLS12_381)
    r1cs, wasm, program = _compile(log2, work / f"2p{log2}")
    n = read_r1cs(r1cs, BLS12_381).cs.num_variables
    disk = Path(os.environ["PROOFFLOW_CACHE"]) / "wasm"

    def wasm_witness():
        return witness.calculate_witness(wasm, INPUTS, BLS12_381)

    def new_process(empty_disk: bool):
        witness.MODULES = witness.ModuleCache()
        if empty_disk:
            shutil.rmtree(disk, ignore_errors=True)

    out = {"log2": log2, "constraints": read_r1cs(r1cs, BLS12_381).n_constraints, "variables": n,
           "wasm_bytes": wasm.stat().st_size}
    out["wasm_first_call_compiled"] = _times(wasm_witness, repeats, lambda: new_process(True))
    out["wasm_first_call_from_disk"] = _times(wasm_witness, repeats, lambda: new_process(False))
    reference = wasm_witness()
    out["wasm_warm"] = _times(wasm_witness, repeats)
    with ThreadPoolExecutor(2) as pool:
        out["wasm_warm_two_at_once_on_two_threads"] = _times(
            lambda: list(pool.map(lambda _: wasm_witness(), range(2))), repeats)
    values, _ = witness.read_inputs(INPUTS, BLS12_381)
    cpp = native_witness.run_generator(program, f"chain_{log2}", values, BLS12_381, n)
    out["cpp"] = _times(lambda: native_witness.run_generator(program, f"chain_{log2}", values, BLS12_381, n),
                        repeats)
    out["same_witness"] = fr.equal(cpp, reference)
    med = {k: out[k]["median_s"] for k in ("wasm_first_call_compiled", "wasm_first_call_from_disk", "wasm_warm",
                                           "wasm_warm_two_at_once_on_two_threads", "cpp")}
    out["ratios"] = {"first_call_compiled_over_warm": round(med["wasm_first_call_compiled"] / med["wasm_warm"], 2),
                     "first_call_from_disk_over_warm": round(med["wasm_first_call_from_disk"] / med["wasm_warm"], 2),
                     "wasm_warm_over_cpp": round(med["wasm_warm"] / med["cpp"], 2),
                     "wasm_first_call_compiled_over_cpp": round(med["wasm_first_call_compiled"] / med["cpp"], 2),
                     "two_threads_speedup": round(2 * med["wasm_warm"] / med["wasm_warm_two_at_once_on_two_threads"],
                                                  2)}
    out["load_average_1min"] = round(os.getloadavg()[0], 2)  # other work on the machine: two threads need two idle cores
    print(f"2^{log2}: {med} s; ratios {out['ratios']}; same witness: {out['same_witness']}", flush=True)
    return out


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[16, 18])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "witness-cpu.json")
    args = ap.parse_args(argv)
    result = {"environment": _env.environment(packages=("numpy", "wasmtime")), "circuit": "chain (circom)",
              "sizes": {}}
    with tempfile.TemporaryDirectory(prefix="proofflow-bench-witness-") as tmp:
        os.environ["PROOFFLOW_CACHE"] = str(Path(tmp) / "cache")  # a disk cache of its own, emptied at will
        from proofflow import settings
        settings.reload()
        for log2 in args.sizes:
            result["sizes"][str(log2)] = bench_size(log2, args.repeats, Path(tmp))
            _env.write(args.out, result)
    return result


if __name__ == "__main__":
    main()
