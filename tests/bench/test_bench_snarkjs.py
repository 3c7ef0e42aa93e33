"""bench/snarkjs.py on BN254 (--curve bn128), at its smallest size: the chain's files are over
BN254's scalar field, snarkjs and proofflow each verify the other's proof, their public signals
are equal, and the result names the curve."""
from __future__ import annotations

import json
import tempfile

import pytest

from circom_toolchain import installed

pytestmark = pytest.mark.slow


def test_it_compares_with_snarkjs_on_bn128(tmp_path, monkeypatch):
    installed()  # snarkjs from tests/circom/node_modules (skips without node)
    from bench import snarkjs
    from proofflow.prover.circom import read_r1cs
    from proofflow.prover.curves.bn254 import BN254
    snarkjs.write_chain_r1cs(tmp_path / "chain.r1cs", 8, BN254)
    assert read_r1cs(tmp_path / "chain.r1cs").cs.curve is BN254  # the header's prime names the curve

    # the bench's work directory (its witnesses) under the test's, in its input root; the
    # variables set here are the test's, so the bench's own defaults leave no trace in the session
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setenv("PROOFFLOW_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PROOFFLOW_INPUT_ROOTS", str(tmp_path))
    out = tmp_path / "snarkjs.json"
    result = snarkjs.main(["--curve", "bn128", "--sizes", "8", "--repeats", "1", "--snarkjs-repeats", "1",
                           "--out", str(out)])
    assert json.loads(out.read_text()) == result
    assert (result["curve"], result["snarkjs_curve"], result["backend"]) == ("bn254", "bn128", "cpu")
    size = result["sizes"]["8"]
    assert size["constraints"] == 2**8 - 3
    assert size["snarkjs_verifies_proofflow"] and size["proofflow_verifies_snarkjs"] and size["public_equal"]
    assert size["proofflow_s"]["median"] > 0 and size["snarkjs_s"]["median"] > 0 and size["ratio"] > 0
