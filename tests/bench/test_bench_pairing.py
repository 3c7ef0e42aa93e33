"""bench/pairing.py: a Groth16 verification on each curve, BN254 against BLS12-381, written
with what it ran on; each proof is checked to verify (and a tampered one to fail) first."""
from __future__ import annotations

import json

from bench import pairing


def test_it_times_both_curves(tmp_path):
    out = tmp_path / "pairing.json"
    result = pairing.main(["--log2", "8", "--msm-log2", "5", "--repeats", "2", "--out", str(out)])
    assert json.loads(out.read_text())["curves"] == result["curves"]
    assert result["curves"]["bn254"]["proof_bytes"] == 128 and result["curves"]["bls12_381"]["proof_bytes"] == 192
    for row in result["curves"].values():
        for key in ("pairing_check_4", "verify", "decode_and_verify", "msm_g1_2p5", "msm_g2_2p5"):
            assert row[key]["median_ms"] > 0 and row[key]["repeats"] >= 2
    assert result["bn254_verify_vs_bls12_381"] > 0 and "zksnake" in result["environment"]["versions"]
