"""proofflow against snarkjs: the same zkey and witness proved by both, in the same run.

    python -m bench.snarkjs --sizes 12 14 16 [--curve bls12381|bn128] [--backend cpu|gpu] [--snarkjs-max 20]
                            [--out FILE]

On the curve --curve names as snarkjs does (bls12381, the default; bn128: BN254, circom's
default prime and Ethereum's). Per size 2^k: a chain circuit of 2^k - 3 constraints (x_{i+1} = x_i (x_i + 1) + c, public
x, private c, output y; its domain is 2^k), written as a circom .r1cs with its witness as a
.wtns; a test-only snarkjs zkey (``proofflow setup --r1cs``'s writer) registered as a
proofflow circuit. Then:

* snarkjs: ``snarkjs groth16 prove zkey wtns proof public``, a process per proof (as users
  run it): wall seconds, one warm-up run left out where there are repeats;
* proofflow: the proof of the same witness through the pipeline, the key resident as in
  the prover service: synthesis from the .wtns into staging memory (a/b/c, every
  constraint checked), the device phase and the host phase; after one warm-up proof,
  min and median of the repeats. Also the first (cold) proof, with the key's load;
* both ways verified: snarkjs's verifier on proofflow's proof, proofflow's on snarkjs's, and
  their public signals equal.

snarkjs runs only up to --snarkjs-max (it needs minutes per proof beyond 2^20 on 16 cores);
the ratio is snarkjs's median over proofflow's median. Results: --out (JSON; by default
results/snarkjs-<backend>.json, snarkjs-<backend>-bn128.json on BN254).
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench import _env
from proofflow import settings
from proofflow.prover.curves import registry
from proofflow.prover.curves.descriptor import Curve
from proofflow.prover.field.fr import Fr

HERE = Path(__file__).resolve().parent
SNARKJS = Path(os.environ.get("SNARKJS_BIN") or HERE.parent / "tests" / "circom" / "node_modules" / ".bin" / "snarkjs")
K = 1  # the chain's constant: x_{i+1} = x_i * (x_i + K) + c


def _container(magic: bytes, sections: list[tuple[int, bytes]]) -> bytes:
    out = [magic, struct.pack("<II", 1 if magic == b"r1cs" else 2, len(sections))]
    for sid, body in sections:
        out += [struct.pack("<IQ", sid, len(body)), body]
    return b"".join(out)


def _field_header(fr: Fr) -> bytes:
    return struct.pack("<I", 32) + fr.MODULUS.to_bytes(32, "little")


def _scalar_field(curve: Curve | None) -> Fr:
    return Fr.of(curve or registry.get_curve(registry.DEFAULT))


def write_chain_r1cs(path: Path, log2: int, curve: Curve | None = None) -> int:
    """The chain circuit with a 2^log2 domain (the most constraints that fit: 2^log2 - 3)
    as circom writes an .r1cs, over ``curve``'s scalar field (default BLS12-381's). Wires: 0
    one, 1 y, 2 x, 3 c, then acc_1 .. acc_{s-1}. Constraint i: acc_i * (acc_i + K) = acc_{i+1}
    - c, with acc_0 = x and acc_s = y."""
    fr, s = _scalar_field(curve), (1 << log2) - 3
    acc = np.concatenate([[2], np.arange(4, 4 + s - 1), [1]]).astype("<u4")  # acc_0 .. acc_s
    one, minus_one = (1).to_bytes(32, "little"), (fr.MODULUS - 1).to_bytes(32, "little")
    term = np.dtype([("wire", "<u4"), ("coef", "u1", 32)])
    row = np.dtype([("na", "<u4"), ("a", term), ("nb", "<u4"), ("b", term, 2), ("nc", "<u4"), ("c", term, 2)])
    rows = np.zeros(s, dtype=row)
    rows["na"], rows["nb"], rows["nc"] = 1, 2, 2
    rows["a"]["wire"], rows["a"]["coef"] = acc[:-1], np.frombuffer(one, np.uint8)
    rows["b"]["wire"][:, 0], rows["b"]["wire"][:, 1] = 0, acc[:-1]
    rows["b"]["coef"][:, 0] = np.frombuffer(K.to_bytes(32, "little"), np.uint8)
    rows["b"]["coef"][:, 1] = np.frombuffer(one, np.uint8)
    rows["c"]["wire"][:, 0], rows["c"]["wire"][:, 1] = 3, acc[1:]
    rows["c"]["coef"][:, 0] = np.frombuffer(minus_one, np.uint8)
    rows["c"]["coef"][:, 1] = np.frombuffer(one, np.uint8)
    n_wires = 4 + s - 1
    header = _field_header(fr) + struct.pack("<IIIIQI", n_wires, 1, 1, 1, n_wires, s)
    map_section = np.arange(n_wires, dtype="<u8").tobytes()
    path.write_bytes(_container(b"r1cs", [(1, header), (2, rows.tobytes()), (3, map_section)]))
    return s


def write_chain_wtns(path: Path, log2: int, x: int, c: int, curve: Curve | None = None) -> None:
    fr = _scalar_field(curve)
    s, p = (1 << log2) - 3, fr.MODULUS
    accs, a = [], x
    for _ in range(s):
        a = (a * (a + K) + c) % p
        accs.append(a)
    values = [1, accs[-1], x, c] + accs[:-1]
    body = b"".join(v.to_bytes(32, "little") for v in values)
    path.write_bytes(_container(b"wtns", [(1, _field_header(fr) + struct.pack("<I", len(values))), (2, body)]))


def snarkjs(*args, timeout: float = 3600) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(SNARKJS), *map(str, args)], capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"snarkjs {' '.join(map(str, args))}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def snarkjs_version() -> str | None:
    """The first line snarkjs prints (snarkjs@X.Y.Z); its exit status is not 0 here."""
    out = subprocess.run([str(SNARKJS), "--version"], capture_output=True, text=True, timeout=60)
    lines = (out.stdout + out.stderr).strip().splitlines()
    return lines[0] if lines else None


def bench_size(log2: int, backend, work: Path, repeats: int, snarkjs_repeats: int, run_snarkjs: bool,
               seed: int = 7, curve: Curve | None = None) -> dict:
    from proofflow.prover import pipeline
    from proofflow.prover.keys import KeyCache
    from proofflow.prover.staging.pool import staging_pool
    from proofflow.prover.circom import read_r1cs, setup, snarkjs_json, verify_files
    from proofflow.prover.circom import registry as circom_registry
    from proofflow.prover.circuits.by_name import get_circuit
    d = work / f"2p{log2}"
    d.mkdir(parents=True, exist_ok=True)
    r1cs_path, wtns_path, zkey_path = d / "chain.r1cs", d / "chain.wtns", d / "chain.zkey"
    t0 = time.perf_counter()
    curve = curve or registry.get_curve(registry.DEFAULT)
    constraints = write_chain_r1cs(r1cs_path, log2, curve)
    write_chain_wtns(wtns_path, log2, x=3, c=11, curve=curve)
    inputs_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    setup.write_test_zkey(read_r1cs(r1cs_path), seed, zkey_path, backend)
    zkey_s = time.perf_counter() - t0
    name = f"chain{log2}"
    t0 = time.perf_counter()
    circom_registry.add(name, r1cs_path, zkey_path, replace=True)
    register_s = time.perf_counter() - t0
    out = {"log2": log2, "load_1m_before": round(os.getloadavg()[0], 2), "constraints": constraints,
           "write_inputs_s": round(inputs_s, 3),
           "test_zkey_s": round(zkey_s, 3), "register_s": round(register_s, 3),
           "zkey_bytes": zkey_path.stat().st_size}
    print(f"2^{log2}: {constraints} constraints; inputs {inputs_s:.1f} s, test zkey {zkey_s:.1f} s, "
          f"registered {register_s:.1f} s", flush=True)

    circuit = get_circuit(name, log2, curve.name)
    pool = staging_pool(pinned=backend.name == "gpu")

    def prove(timer=None):
        with pipeline.synthesize(circuit, 0, 0, pool, timer, input=str(wtns_path)) as staged:
            return pipeline.prove(key, staged, backend, timer)

    t0 = time.perf_counter()
    key = KeyCache().get(circom_registry.key_dir(name), name, log2, curve=curve.name)
    backend.prepare(key.pk)
    proof = prove()
    out["proofflow_cold_s"] = round(time.perf_counter() - t0, 4)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        proof = prove()
        times.append(time.perf_counter() - t0)
    out["proofflow_s"] = {"min": round(min(times), 4), "median": round(statistics.median(times), 4),
                          "repeats": repeats, "warmup": 1}
    ours = d / "proofflow"
    ours.mkdir(exist_ok=True)
    snarkjs_json.write_proof(ours / "proof.json", proof)
    public = [int(v) for v in circuit.instance(0, 0, str(wtns_path)).public_inputs]
    snarkjs_json.write_public(ours / "public.json", public)
    vk = circom_registry.circuit_dir(name) / "verification_key.json"
    print(f"  proofflow ({backend.name}): cold {out['proofflow_cold_s']} s, median {out['proofflow_s']['median']} s",
          flush=True)
    if run_snarkjs:
        proof_s, public_s = d / "snarkjs.proof.json", d / "snarkjs.public.json"
        times = []
        for i in range(snarkjs_repeats + (1 if snarkjs_repeats > 1 else 0)):
            t0 = time.perf_counter()
            snarkjs("groth16", "prove", zkey_path, wtns_path, proof_s, public_s)
            if i or snarkjs_repeats == 1:
                times.append(time.perf_counter() - t0)
        out["snarkjs_s"] = {"min": round(min(times), 3), "median": round(statistics.median(times), 3),
                            "repeats": len(times), "warmup": 1 if snarkjs_repeats > 1 else 0}
        out["snarkjs_verifies_proofflow"] = "OK" in snarkjs("groth16", "verify", vk, ours / "public.json",
                                                           ours / "proof.json").stdout
        out["proofflow_verifies_snarkjs"] = verify_files(vk, public_s, proof_s)
        out["public_equal"] = snarkjs_json.read_public(public_s) == public
        out["ratio"] = round(out["snarkjs_s"]["median"] / out["proofflow_s"]["median"], 1)
        print(f"  snarkjs: median {out['snarkjs_s']['median']} s; ratio {out['ratio']}x; "
              f"snarkjs verifies ours: {out['snarkjs_verifies_proofflow']}, ours verifies snarkjs's: "
              f"{out['proofflow_verifies_snarkjs']}", flush=True)
    else:
        from proofflow.prover.circom import verify
        out["proofflow_verifies_own"] = verify(snarkjs_json.read_verification_key(vk), public, proof)
    circom_registry.remove(name)
    shutil.rmtree(d, ignore_errors=True)
    out["load_1m_after"] = round(os.getloadavg()[0], 2)  # the machine may be shared: what else ran beside
    return out


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[12, 14, 16])
    ap.add_argument("--curve", choices=[c.snarkjs_name for c in registry.CURVES.values()],
                    default=registry.get_curve(registry.DEFAULT).snarkjs_name,
                    help="the curve, by snarkjs's name (bn128: BN254)")
    ap.add_argument("--backend", choices=("cpu", "gpu"), default="cpu")
    ap.add_argument("--snarkjs-max", type=int, default=16, help="largest log2 snarkjs proves (default 16)")
    ap.add_argument("--repeats", type=int, default=5, help="proofflow's timed proofs per size")
    ap.add_argument("--snarkjs-repeats", type=int, default=3, help="snarkjs's timed proofs per size (small sizes)")
    ap.add_argument("--out", type=Path, help="default results/snarkjs-<backend>[-bn128].json")
    args = ap.parse_args(argv)
    curve = registry.by_snarkjs_name(args.curve)
    if args.out is None:
        tag = "" if curve.name == registry.DEFAULT else f"-{args.curve}"
        args.out = HERE / "results" / f"snarkjs-{args.backend}{tag}.json"
    if not SNARKJS.exists():
        sys.exit(f"no snarkjs at {SNARKJS}: npm ci --prefix tests/circom (or set SNARKJS_BIN)")
    from proofflow.prover.backend.by_name import get_backend
    backend = get_backend(args.backend)
    backend.warm_up()
    result = {"environment": _env.environment(("numpy", "py-arkworks-bls12381", "zksnake", "cupy-cuda12x",
                                                  "cupy-cuda13x")),
              "snarkjs": snarkjs_version(), "node": shutil.which("node") and subprocess.run(
                  ["node", "--version"], capture_output=True, text=True).stdout.strip(),
              "backend": backend.name, "curve": curve.name, "snarkjs_curve": args.curve,
              "circuit": "chain: x_{i+1} = x_i (x_i + 1) + c, 2^k - 3 constraints",
              "sizes": {}}
    if backend.name == "gpu":
        from proofflow.prover import device
        result["device"] = device.name()
    else:
        result["cpu_threads"] = backend.threads  # PROOFFLOW_CPU_THREADS: the MSMs' threads
    with tempfile.TemporaryDirectory(prefix="proofflow-bench-snarkjs-") as tmp:
        os.environ.setdefault("PROOFFLOW_HOME", str(Path(tmp) / "home"))  # the registry of this run
        os.environ.setdefault("PROOFFLOW_INPUT_ROOTS", tmp)  # the witnesses it writes
        settings.reload()
        for log2 in args.sizes:
            result["sizes"][str(log2)] = bench_size(log2, backend, Path(tmp), args.repeats,
                                                    args.snarkjs_repeats if log2 <= 16 else 1,
                                                    log2 <= args.snarkjs_max, curve=curve)
            _env.write(args.out, result)
    return result


if __name__ == "__main__":
    main()
