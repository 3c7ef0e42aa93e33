"""What ptxas makes of the kernels in each product variant, without a GPU: every module
compiled for one arch by nvcc (the CUDA toolkit's ptxas, the one NVRTC wraps: for mul32 it
gives the registers, spills and SASS of the NVRTC 13.0 table in bench/results/archive/gpu-notes.md
exactly), then disassembled by nvdisasm (pip install nvidia-cuda-nvdisasm). Per kernel: registers,
stack frame, spill stores/loads (bytes), SASS instructions and the commonest opcodes.

    python -m bench.sass [--arch 90] [--variants mul32 wide] [--modules field.cu msm.cu:g1 ...]
                         [--out bench/results/sass-variants.json]

field.cu's fq_mul_vec / fq_sqr_vec are one Fq product / square plus ~40 instructions of
loads, stores and loop.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from proofflow.prover.curves.bls12_381 import BLS12_381 as CURVE
from proofflow.prover.device import cache, source

MODULES = ("field.cu", "ntt.cu", "msm.cu:g1", "msm.cu:g2", "fixed_base.cu:g1", "fixed_base.cu:g2", "bitsum.cu:g1",
           "bitsum.cu:g2")
_USAGE = re.compile(r"Function properties for (\w+)\n\s+(\d+) bytes stack frame, (\d+) bytes spill stores, "
                    r"(\d+) bytes spill loads(?:\n[^\n]*Used (\d+) registers)?")
_OPCODE = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)")


def tool(name: str, env: str) -> str:
    """A CUDA tool from $env, PATH or the pip wheels' nvidia/cu*/bin."""
    found = os.environ.get(env) or shutil.which(name)
    if not found:
        import site
        wheels = (x for p in site.getsitepackages() + sys.path for x in Path(p).glob(f"nvidia/cu*/bin/{name}"))
        found = next(map(str, wheels), None)
    if not found:
        sys.exit(f"{name} not found: set {env}, put it on PATH, or pip install nvidia-cuda-{name}")
    return found


def compile_module(name: str, variant: str, group: str | None, arch: str, workdir: Path) -> dict:
    """{kernel: {regs, stack, spill_stores, spill_loads, sass, top}} for one module."""
    stem = workdir / cache.Module(CURVE, name, variant, group).label
    stem.with_suffix(".cu").write_text(source.source(name, CURVE))
    options = source.options(variant, group, name) + ("-ftz=true",)
    proc = subprocess.run([tool("nvcc", "NVCC"), f"-arch=sm_{arch}", "-cubin", "--resource-usage", *options,
                           "-o", str(stem.with_suffix(".cubin")), str(stem.with_suffix(".cu"))],
                          capture_output=True, text=True)
    if proc.returncode:
        sys.exit(f"nvcc failed on {stem.name}:\n{proc.stderr[-4000:]}")
    out = {}
    for fn, stack, st, ld, regs in _USAGE.findall(proc.stderr):  # non-inlined functions (G2's xyzz_add): no regs
        out[fn] = {"regs": int(regs) if regs else None, "stack": int(stack), "spill_stores": int(st),
                   "spill_loads": int(ld)}
    text = subprocess.run([tool("nvdisasm", "NVDISASM"), "-c", str(stem.with_suffix(".cubin"))],
                          capture_output=True, text=True, check=True).stdout
    ops, kernel = collections.defaultdict(collections.Counter), None
    for line in text.splitlines():
        m = re.match(r"\s*\.text\.(\w+):", line)
        if m:
            kernel = m.group(1)
        elif kernel and (m := _OPCODE.search(line)):
            ops[kernel][m.group(1)] += 1
    for fn, counts in ops.items():
        row = out.setdefault(fn, {})
        row["sass"] = sum(counts.values())
        row["top"] = dict(counts.most_common(6))
    return out


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arch", default="90")
    ap.add_argument("--variants", nargs="+", default=list(source.CURVE_VARIANTS), choices=source.VARIANTS)
    ap.add_argument("--modules", nargs="+", default=list(MODULES), metavar="FILE[:GROUP]")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    result = {"arch": args.arch, "nvcc": subprocess.run([tool("nvcc", "NVCC"), "--version"], capture_output=True,
                                                         text=True).stdout.strip().splitlines()[-1], "modules": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for spec in args.modules:
            name, _, group = spec.partition(":")
            for variant in args.variants:
                label = cache.Module(CURVE, name, variant, group or None).label
                rows = result["modules"][label] = compile_module(name, variant, group or None, args.arch, Path(tmp))
                for fn, row in sorted(rows.items()):
                    print(f"{label:22s} {fn:40s} regs {row.get('regs') or '-':>3} stack {row.get('stack', '-'):>4} "
                          f"spills {row.get('spill_stores', '-')}/{row.get('spill_loads', '-')} "
                          f"SASS {row.get('sass', '-'):>6}  {row.get('top', '')}", flush=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    main()
