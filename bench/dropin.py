"""`proofflow groth16 prove` as a user runs it, a process per proof: in the calling process
(`--no-service`) against through the device's warm prover service (`--service`).

    python -m bench.dropin --sizes 12 16 [--backend cpu|gpu] [--repeats 3] [--out FILE]

Per size 2^k: bench.snarkjs's chain circuit, its witness and a test-only zkey (set up on the
backend), in a fresh home; one call parses the zkey into the key cache first, so every timed
call takes it from there. Then wall seconds of whole CLI processes: ``repeats`` in-process
calls; the service's first call (its start, the kernels, the key's load and upload) and
``repeats`` calls that find it warm. Every proof is verified against the zkey's verifying key.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import _env
from bench.snarkjs import write_chain_r1cs, write_chain_wtns

HERE = Path(__file__).resolve().parent


def _call(files: dict, backend: str, service: str, i: int) -> tuple[float, dict]:
    proof, public = files["dir"] / f"proof{i}.json", files["dir"] / f"public{i}.json"
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "proofflow.cli", "groth16", "prove", files["zkey"], files["wtns"], proof,
                          public, "--backend", backend, service, "--json"], capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if out.returncode != 0:
        raise RuntimeError(f"groth16 prove exited {out.returncode}: {out.stderr}")
    from proofflow.prover.circom import verify_files
    if not verify_files(files["vk"], public, proof):
        raise RuntimeError(f"the proof of call {i} does not verify")
    return seconds, json.loads(out.stdout)


def bench_size(log2: int, backend: str, work: Path, repeats: int) -> dict:
    from proofflow.prover.backend.by_name import get_backend
    from proofflow.prover.circom import read_r1cs, read_zkey, setup
    from proofflow.prover.circom.snarkjs_json import write_verification_key
    from proofflow.prover.service.client import ServiceClient
    d = work / f"2p{log2}"
    d.mkdir()
    files = {"dir": d, "zkey": d / "chain.zkey", "wtns": d / "chain.wtns", "vk": d / "vk.json"}
    write_chain_r1cs(d / "chain.r1cs", log2)
    write_chain_wtns(files["wtns"], log2, x=3, c=11)
    setup.write_test_zkey(read_r1cs(d / "chain.r1cs"), 5, files["zkey"], get_backend(backend))
    write_verification_key(files["vk"], read_zkey(files["zkey"]).vk)
    _call(files, backend, "--no-service", 0)  # the zkey parsed into the key cache
    in_process = [_call(files, backend, "--no-service", 1 + i)[0] for i in range(repeats)]
    client = ServiceClient(backend, 0)
    client.stop()
    try:
        cold, first = _call(files, backend, "--service", 100)
        warm = [_call(files, backend, "--service", 101 + i) for i in range(repeats)]
    finally:
        client.stop()
    assert first["service"]["started"] and all(not r["service"]["started"] and not r["service"]["key_loaded"]
                                               for _, r in warm)
    warm_s = [s for s, _ in warm]
    return {"in_process_s": in_process, "service_first_s": cold, "service_start_s": first["service"]["start_s"],
            "service_warm_s": warm_s, "in_process_median_s": statistics.median(in_process),
            "service_warm_median_s": statistics.median(warm_s),
            "speedup": statistics.median(in_process) / statistics.median(warm_s)}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[12, 16])
    ap.add_argument("--backend", choices=("cpu", "gpu"), default="cpu")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "dropin-cpu.json")
    args = ap.parse_args(argv)
    result = {"environment": _env.environment(("numpy", "py-arkworks-bls12381", "cupy-cuda12x", "cupy-cuda13x")),
              "backend": args.backend, "circuit": "bench.snarkjs's chain, 2^k - 3 constraints",
              "what": "wall seconds of a `proofflow groth16 prove` process, zkey from the key cache", "sizes": {}}
    if args.backend == "gpu":
        from proofflow.prover import device
        result["device"] = device.name()
    with tempfile.TemporaryDirectory(prefix="proofflow-bench-dropin-") as tmp:
        os.environ["PROOFFLOW_HOME"] = str(Path(tmp) / "home")  # inherited by the CLI and the service
        from proofflow import settings
        settings.reload()
        for log2 in args.sizes:
            result["sizes"][str(log2)] = bench_size(log2, args.backend, Path(tmp), args.repeats)
            print(log2, json.dumps(result["sizes"][str(log2)]), flush=True)
            _env.write(args.out, result)
    return result


if __name__ == "__main__":
    main()
