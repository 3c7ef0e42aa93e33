"""A Groth16 verification on the CPU on each registered curve: BN254 (its groups in the
engine's C, its pairing arkworks's through zksnake) against BLS12-381 (py-arkworks-bls12381).
Per curve, on a MiMC key of 2^L: the 4-pairing check alone, a verification of decoded
points, and a proof's bytes decoded then verified (what a bundle's check costs a proof); and
a G1 and a G2 MSM of 2^M points on one thread (the CPU backend's MSM). Every proof is first
checked to verify and a tampered one to fail.

    python -m bench.pairing [--log2 8] [--msm-log2 14] [--repeats 20] [--out FILE]
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

from bench import _env
from proofflow.prover import points
from proofflow.prover.backend.by_name import get_backend
from proofflow.prover.circuits.by_name import get_circuit
from proofflow.prover.curves import registry
from proofflow.prover.field.fr import Fr
from proofflow.prover.groth16 import generator, prover, verifier
from proofflow.prover.groth16.data_structures import Proof

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "pairing-cpu.json"


def _ms(stats: dict) -> dict:
    return {"median_ms": round(stats["median_s"] * 1e3, 3), "min_ms": round(stats["min_s"] * 1e3, 3),
            "repeats": stats["repeats"]}


def curve_row(name: str, log2: int, msm_log2: int, repeats: int) -> dict:
    curve = registry.get_curve(name)
    circuit = get_circuit("mimc", log2, name)
    pk = generator.setup(circuit, 1)
    inst = circuit.instance(2, 0)
    proof = prover.prove(pk, circuit.constraint_system, inst.witness, get_backend("cpu"), np.random.default_rng(0))
    raw, vk, public = proof.to_bytes(), pk.vk, inst.public_inputs
    if not verifier.verify(vk, public, proof):
        sys.exit(f"{name}: the proof does not verify")
    if verifier.verify(vk, [public[0], (public[1] + 1) % curve.fr.modulus], proof):
        sys.exit(f"{name}: a tampered public input verifies")
    acc = verifier.prepare_inputs(vk, public)
    g1s, g2s = [proof.a, -vk.alpha_g1, -acc, -proof.c], [proof.b, vk.beta_g2, vk.gamma_g2, vk.delta_g2]
    row = {"proof_bytes": len(raw),
           "pairing_check_4": _ms(_env.repeat(lambda: curve.pairing_check(g1s, g2s), repeats)),
           "verify": _ms(_env.repeat(lambda: verifier.verify(vk, public, proof), repeats)),
           "decode_and_verify": _ms(_env.repeat(lambda: verifier.verify(vk, public, Proof.from_bytes(curve, raw)),
                                                repeats))}
    fr, n = Fr.of(curve), 1 << msm_log2
    scalars = fr.random(n, np.random.default_rng(3))
    for group in ("g1", "g2"):
        table = generator.fixed_base(curve, group, fr.random(n, np.random.default_rng(4)), workers=1)
        table.prepare()
        row[f"msm_{group}_2p{msm_log2}"] = _ms(_env.repeat(lambda: points.msm(table, scalars), max(3, repeats // 5)))
    return row


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--log2", type=int, default=8, help="the MiMC key's size")
    ap.add_argument("--msm-log2", type=int, default=14, help="the MSMs' points")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    env = _env.environment(("numpy", "py-arkworks-bls12381", "zksnake"))
    result = {"environment": {**env, "load_average_1m": round(os.getloadavg()[0], 2)},
              "note": "the MSMs on one thread, the pairings as each library runs them; load_average_1m: how busy "
                      "the host was at the start (the 2-core CI machine runs other work)",
              "log2": args.log2, "curves": {}}
    for name in ("bn254", "bls12_381"):
        result["curves"][name] = curve_row(name, args.log2, args.msm_log2, args.repeats)
        print(f"{name}: {result['curves'][name]}", flush=True)
    bn, bls = (result["curves"][c]["decode_and_verify"]["median_ms"] for c in ("bn254", "bls12_381"))
    result["bn254_verify_vs_bls12_381"] = round(bn / bls, 3)
    _env.write(args.out, result)
    return result


if __name__ == "__main__":
    main()
