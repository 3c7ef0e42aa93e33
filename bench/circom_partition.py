"""A circom partition's device phase against a built-in one's, of the same constraints and
witness (issue #36 item 3: within 1.15x of a MiMC partition at 2^20, 2^22 and 2^24).

    python -m bench.circom_partition --sizes 20 22 24 --work DIR --out FILE [--backend gpu|cpu]
                                     [--warmup 1] [--repeats 5] [--curve bls12_381|bn254]

Per size 2^L: the MiMC circuit's key (``python -m proofflow.prover setup``); the same circuit as
circom's files (bench.circom_export: its r1cs, partition 0's witness as a .wtns), a test-only
zkey for that r1cs (``proofflow setup --r1cs``) and the circuit registered with it (in
$PROOFFLOW_HOME, the .wtns in its first input root); then
bench.partition once for each, in a process of its own (each with its key alone resident):
the built-in MiMC partition, and the registered circuit proving the .wtns, where its key's
tables, its H in the zkey's odd-coset basis and a/b/c from the r1cs take the circom path. Both
sides see the same witness values, so the ratio is what the circom path itself adds. (Witness
generation and circom-compiled circuits: bench.circom_family.) ``--curve`` runs both over
that curve (the r1cs over its scalar field, as circom -p writes it: bn128 for BN254), where
the circom partition's device phase is also held to the issue's bound (bench.partition's
``target``: on BN254 0.15 s at 2^22, 0.5 s at 2^24).

The steps' products are kept under --work, and a size whose two results are there is not run
again: a run cut short (a device call's limit) resumes. Results merge into --out by size.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from bench import _env
from bench.circom_export import export
from proofflow.prover.curves import registry as curves

ROOT = Path(__file__).resolve().parent.parent
TARGET_RATIO = 1.15
SEED = 0


def _run(args: list[str], log: Path, timeout: float | None = None) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    with open(log, "w") as f:
        proc = subprocess.run([sys.executable, "-m", *args], cwd=ROOT, env=env, stdout=f, stderr=subprocess.STDOUT,
                              timeout=timeout)
    if proc.returncode != 0:
        tail = log.read_text()[-2000:]
        raise RuntimeError(f"python -m {' '.join(args)}: exit {proc.returncode}\n{tail}")


def _device(result: dict) -> dict:
    steady = result["steady"]
    return {"device_s": steady["device"], "ntt_s": steady["ntt"], "msm_s": steady["msm"], "h2d_s": steady["h2d"],
            "all_verified": result["all_verified"]}


def compare(mimc: dict, circom: dict) -> dict:
    """The two partitions' device phases (min and median) and the median's ratio against the
    target; the circom partition's own bound, where an issue sets one (``device_target``)."""
    ratio = circom["steady"]["device"]["median"] / mimc["steady"]["device"]["median"]
    return {"mimc": _device(mimc), "circom": _device(circom), "ratio": round(ratio, 3), "target": TARGET_RATIO,
            "met": ratio <= TARGET_RATIO, "device_target": circom.get("target"), "witness": circom.get("witness"),
            "device": mimc["environment"].get("device"), "repeats": mimc["repeats"], "warmup": mimc["warmup"]}


def one_size(log2: int, work: Path, backend: str, warmup: int, repeats: int,
             curve: str = curves.DEFAULT) -> dict:
    from proofflow import settings
    from proofflow.prover.circom import registry
    tag = curves.path_tag(curves.get_curve(curve))  # the default curve's names predate curves
    d = work / f"{tag}2p{log2}"
    d.mkdir(parents=True, exist_ok=True)
    steps: dict = {}
    key = d / "mimc-key"
    if not (key / "params.json").exists():
        t0 = time.perf_counter()
        _run(["proofflow.prover", "setup", "--circuit", "mimc", "--log2", str(log2), "--seed", str(SEED),
              "--curve", curve, "--backend", backend, "--out", str(key)], d / "mimc-setup.log")
        steps["mimc_setup_s"] = round(time.perf_counter() - t0, 2)
    name = f"bench-mimc-{tag}2p{log2}"
    wtns = settings.current().input_roots[0] / f"{name}.wtns"
    if not (registry.circuit_dir(name) / "circuit.json").exists() or not wtns.exists():
        t0 = time.perf_counter()
        exported = export("mimc", log2, d / "circom", SEED, curve=curve)
        steps["export_s"] = round(time.perf_counter() - t0, 2)
        steps["r1cs_bytes"] = exported["r1cs_bytes"]
        zkey = d / "circom" / "test.zkey"
        t0 = time.perf_counter()
        _run(["proofflow.cli", "setup", "--r1cs", str(d / "circom" / "circuit.r1cs"), "--out", str(zkey),
              "--seed", str(SEED), "--backend", backend, "--force"], d / "zkey-setup.log")
        steps["zkey_setup_s"] = round(time.perf_counter() - t0, 2)
        t0 = time.perf_counter()
        registry.add(name, d / "circom" / "circuit.r1cs", zkey, replace=True)
        steps["register_s"] = round(time.perf_counter() - t0, 2)
        zkey.unlink()  # the registry holds its own copy
        wtns.parent.mkdir(parents=True, exist_ok=True)
        (d / "circom" / "input.wtns").replace(wtns)
    common = ["--backend", backend, "--warmup", str(warmup), "--repeats", str(repeats)]
    if not (d / "mimc.json").exists():
        _run(["bench.partition", "--circuit", "mimc", "--log2", str(log2), "--key", str(key), "--curve", curve,
              *common, "--out", str(d / "mimc.json.tmp")], d / "mimc.log")
        (d / "mimc.json.tmp").rename(d / "mimc.json")
    if not (d / "circom.json").exists():
        _run(["bench.partition", "--circuit", name, "--input", str(wtns), *common,
              "--out", str(d / "circom.json.tmp")], d / "circom.log")
        (d / "circom.json.tmp").rename(d / "circom.json")
    out = compare(json.loads((d / "mimc.json").read_text()), json.loads((d / "circom.json").read_text()))
    if steps:
        (d / "steps.json").write_text(json.dumps(steps))
    if (d / "steps.json").exists():
        out["once_s"] = json.loads((d / "steps.json").read_text())
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.circom_partition", description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[20, 22, 24])
    p.add_argument("--backend", choices=("gpu", "cpu"), default="gpu")
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--curve", choices=curves.NAMES, default=curves.DEFAULT,
                   help="the curve both partitions are over (default %(default)s)")
    p.add_argument("--work", type=Path, required=True, help="keys, files and per-size results (resumable)")
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    result = json.loads(args.out.read_text()) if args.out.exists() else {"sizes": {}}
    status = 0
    for log2 in args.sizes:
        print(f"2^{log2}: ...", file=sys.stderr, flush=True)
        try:
            row = one_size(log2, args.work, args.backend, args.warmup, args.repeats, args.curve)
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            print(f"2^{log2} failed: {exc}", file=sys.stderr, flush=True)
            status = 1
            continue
        result["sizes"][f"2p{log2}"] = row
        result["environment"] = _env.environment(("numpy", "py-arkworks-bls12381", "cupy-cuda13x"))
        result["backend"], result["curve"] = args.backend, args.curve
        _env.write(args.out, result)
        bound = row["device_target"]
        print(f"2^{log2}: device median mimc {row['mimc']['device_s']['median']:.4f} s, circom "
              f"{row['circom']['device_s']['median']:.4f} s: {row['ratio']}x (target {TARGET_RATIO}x, "
              f"met: {row['met']})" + (f"; circom's bound {bound['device_phase_s']} s, met: {bound['met']}"
                                       if bound else ""), file=sys.stderr, flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
