"""On a GPU, the shipped kernels: `proofflow kernels build` into an empty kernel directory,
then a fresh process loads every module from it without one NVRTC compile, and its NTTs and
MSMs still match the CPU bit for bit; the first load on a machine compiles and persists, and
a damaged cubin is rebuilt. Skipped without CuPy or a GPU."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("cupy")
from proofflow.prover.device import available as gpu_available  # noqa: E402

if not gpu_available():
    pytest.skip("no GPU visible", allow_module_level=True)

pytestmark = [pytest.mark.gpu, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]

# Run in a fresh process: loads the modules named on its command line ("all", or "ntt": the
# mul32 NTT module only), refusing any NVRTC compile with "no-compile", then checks the
# kernels against the CPU and prints what happened as JSON.
CHECK = r"""
import json, sys, time
import numpy as np
from proofflow import settings
from proofflow.prover.backend.by_name import device_options
from proofflow.prover.curves.bls12_381 import BLS12_381 as CURVE
from proofflow.prover.device import cache
options = device_options(settings.current())

which, mode = sys.argv[1], sys.argv[2]
if mode == "no-compile":
    def refuse(*args):
        raise AssertionError("an NVRTC compile in a process that should only load cubins")
    cache.compile_cubin = refuse
modules = cache.MODULES if which == "all" else (cache.Module(CURVE, "ntt.cu", "mul32"),)
t0 = time.perf_counter()
for m in modules:
    cache.load(m.curve, m.variant, m.name, m.group, kernel_dir=options.kernel_dir)
load_s = time.perf_counter() - t0

from proofflow.prover import points
from proofflow.prover.backend.cpu import CpuBackend
from proofflow.prover.device.backend import GpuBackend
from proofflow.prover.field.fr import Fr
from proofflow.prover.polynomial.domain import Radix2Domain
fr = Fr.of(CURVE)
rng = np.random.default_rng(19)
d = Radix2Domain(12, CURVE)
x = fr.random(d.size, rng)
same = {f"ntt-{v}": bool(np.array_equal(GpuBackend(options, v).ntt(d, x), CpuBackend().ntt(d, x)))
        for v in sorted({m.variant for m in modules if m.name == "ntt.cu"})}
if which == "all":
    from proofflow.prover.device import msm as gpu_msm
    for group, n in (("g1", 64), ("g2", 16)):
        g = CURVE.point_class(group)()
        table = points.PointTable.from_points(CURVE, group,
                                              [g * CURVE.scalar(int(k)) for k in fr.to_ints(fr.random(n, rng))])
        s = fr.random(n, rng)
        got = (gpu_msm.msm_g1 if group == "g1" else gpu_msm.msm_g2)(table, s, options)
        same[f"msm-{group}"] = bool(got == points.msm(table, s))
print(json.dumps({"compiles": cache.compiles, "load_s": load_s, "same": same}))
"""


def _env(kernel_dir: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PROOFFLOW_CUDA_ARCHS"}
    env["PROOFFLOW_KERNEL_DIR"] = str(kernel_dir)
    return env


def _check(kernel_dir: Path, which: str, mode: str) -> dict:
    out = subprocess.run([sys.executable, "-c", CHECK, which, mode], env=_env(kernel_dir), cwd=ROOT,
                         capture_output=True, text=True, timeout=1200)
    assert out.returncode == 0, out.stderr[-4000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_built_kernels_load_in_a_fresh_process_without_compiling(tmp_path):
    kernel_dir = tmp_path / "kernels"
    # cubins this session built already (PROOFFLOW_KERNEL_DIR, e.g. bench/device.sh staging's first
    # step) are copied in, and must be found current: compiling them again takes minutes
    prebuilt = os.environ.get("PROOFFLOW_KERNEL_DIR")
    reused = bool(prebuilt and any(Path(prebuilt).glob("*.cubin")))
    if reused:
        shutil.copytree(prebuilt, kernel_dir)
    build = subprocess.run([sys.executable, "-m", "proofflow.cli", "kernels", "build", "--json"],
                           env=_env(kernel_dir), cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert build.returncode == 0, build.stderr[-4000:]
    results = json.loads(build.stdout)
    assert len(results) == 8, results
    assert all(r["built"] is not reused for r in results), results  # all compiled, or all found current
    assert len(list(kernel_dir.glob("*.cubin"))) == 8

    got = _check(kernel_dir, "all", "no-compile")
    assert got["compiles"] == 0
    assert got["same"] == {"ntt-mul32": True, "ntt-mul64": True, "msm-g1": True, "msm-g2": True}, got
    assert got["load_s"] < 30, got  # loading, not the minutes of compiling

    listing = subprocess.run([sys.executable, "-m", "proofflow.cli", "kernels", "list", "--json"],
                             env=_env(kernel_dir), cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert {e["status"] for e in json.loads(listing.stdout)["kernels"]} == {"current"}


def test_the_first_load_compiles_and_persists_and_a_damaged_cubin_is_rebuilt(tmp_path):
    kernel_dir = tmp_path / "kernels"
    first = _check(kernel_dir, "ntt", "compile")
    assert first["compiles"] == 1 and first["same"] == {"ntt-mul32": True}, first
    (cubin,) = kernel_dir.glob("ntt-mul32-bls12_381-sm_*.cubin")

    again = _check(kernel_dir, "ntt", "no-compile")
    assert again["compiles"] == 0 and again["same"] == {"ntt-mul32": True}, again

    cubin.write_bytes(cubin.read_bytes()[: cubin.stat().st_size // 2])
    rebuilt = _check(kernel_dir, "ntt", "compile")
    assert rebuilt["compiles"] == 1 and rebuilt["same"] == {"ntt-mul32": True}, rebuilt
    assert _check(kernel_dir, "ntt", "no-compile")["compiles"] == 0


# In a fresh process with an empty CuPy kernel cache (CUPY_CACHE_DIR): warm_up, then a proof;
# prints the CuPy cache's files after each, whether the proof verifies, and the names of the
# kernels in the sources of the files the proof added (CUPY_CACHE_SAVE_CUDA_SOURCE keeps them).
WARM = r"""
import json, os, re, sys
from pathlib import Path
from proofflow import settings
from proofflow.prover import pipeline
from proofflow.prover.backend.by_name import device_options
from proofflow.prover.circuits.by_name import get_circuit
from proofflow.prover.device.backend import GpuBackend
from proofflow.prover.groth16 import generator, verifier
from proofflow.prover.keys import Key
from proofflow.prover.staging.pool import StagingPool

cache_dir = Path(os.environ["CUPY_CACHE_DIR"])
files = lambda: sorted(str(p.relative_to(cache_dir)) for p in cache_dir.rglob("*") if p.is_file() and p.suffix != ".cu")
backend = GpuBackend(device_options(settings.current()))
backend.warm_up()
after_warm_up = files()
circuit = get_circuit(sys.argv[1], 8)
pk = generator.setup(circuit, 3)
key = Key(pk, circuit.constraint_system, None)
backend.prepare(pk)
with pipeline.synthesize(circuit, 3, 0, StagingPool(1 << 24, pinned=True)) as staged:
    proof = pipeline.prove(key, staged, backend)
    ok = verifier.verify(pk.vk, staged.public_inputs, proof)
after_proof = files()
new_kernels = sorted({name for f in set(after_proof) - set(after_warm_up)
                      for src in cache_dir.rglob(Path(f).stem + "*.cu")
                      for name in re.findall(r"__global__\s+void\s+(\w+)", src.read_text())})
print(json.dumps({"after_warm_up": after_warm_up, "after_proof": after_proof, "verifies": bool(ok),
                  "new_kernels": new_kernels}))
"""


@pytest.mark.parametrize("circuit", ["mimc", "bits"])
def test_after_warm_up_a_first_proof_compiles_nothing(tmp_path, circuit):
    """CuPy compiles its own kernels (scans, searches, reductions) on first use: the service's
    warm-up runs every MSM path and the H computation once, so a fresh worker's first proof
    finds them compiled (measured before: a first proof's MSM phase of 10.5 s, then 0.8 s)."""
    env = {**os.environ, "CUPY_CACHE_DIR": str(tmp_path / "cupy"), "CUPY_CACHE_SAVE_CUDA_SOURCE": "1"}
    out = subprocess.run([sys.executable, "-c", WARM, circuit], env=env, cwd=ROOT, capture_output=True, text=True,
                         timeout=1200)
    assert out.returncode == 0, out.stderr[-4000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["verifies"]
    assert got["after_warm_up"], "the warm-up compiled nothing: is CUPY_CACHE_DIR honoured?"
    assert got["after_proof"] == got["after_warm_up"], (got["new_kernels"],
                                                        sorted(set(got["after_proof"]) - set(got["after_warm_up"])))
