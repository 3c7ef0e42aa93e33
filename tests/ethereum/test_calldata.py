"""proofflow.prover.circom.calldata without node: where each number of snarkjs's proof.json
and public.json goes in the calldata (B's Fq2 coordinates as (c1, c0)), its refusals, and
a bundle's calldata file only on a curve Ethereum verifies. Byte-for-byte agreement with
snarkjs is tested against snarkjs itself in test_evm_verifier.py."""
from __future__ import annotations

import json

import pytest

from proofflow.prover import bundle
from proofflow.prover.circom import calldata
from proofflow.prover.circom.errors import CorruptFile, NotEvmCurve
from proofflow.prover.curves.bls12_381 import BLS12_381
from proofflow.prover.groth16.data_structures import Proof

MISSING = object()  # a field left out


def _proof(numbers) -> dict:
    """A proof.json with the given 8 coordinates, in snarkjs's layout."""
    a0, a1, b00, b01, b10, b11, c0, c1 = (str(n) for n in numbers[:8])
    return {"pi_a": [a0, a1, "1"], "pi_b": [[b00, b01], [b10, b11], ["1", "0"]], "pi_c": [c0, c1, "1"],
            "protocol": "groth16", "curve": "bn128"}


def test_each_number_goes_where_the_contract_reads_it():
    numbers = [3 ** (i + 100) % (1 << 256) for i in range(8)]
    a0, a1, b00, b01, b10, b11, c0, c1 = numbers
    public = [0, 1, (1 << 256) - 1]
    text = calldata.calldata(_proof(numbers), [str(p) for p in public])
    a, b, c, signals = json.loads(f"[{text}]")
    words = [a, b[0], b[1], c, signals]
    assert all(len(w) == 66 and w == w.lower() and w.startswith("0x") for group in words for w in group)
    assert [[int(w, 16) for w in group] for group in words] == [[a0, a1], [b01, b00], [b11, b10], [c0, c1], public]


def test_no_public_signals():
    assert calldata.calldata(_proof(range(1, 9)), []).endswith("],[]")


@pytest.mark.parametrize("change, error, fragments", [
    ({"curve": "bls12381"}, NotEvmCurve, ("proof.json", "'bls12381'", "bn128", "EIP-196/197")),
    ({"curve": None}, NotEvmCurve, ("proof.json", "None", "bn128")),
    ({"protocol": "plonk"}, CorruptFile, ("protocol", "'plonk'", "'groth16'")),
    ({"pi_c": MISSING}, CorruptFile, ("pi_c", "missing")),
    ({"pi_c": None}, CorruptFile, ("pi_c", "G1 point")),
    ({"pi_b": [["1", "2"], ["3"], ["1", "0"]]}, CorruptFile, ("pi_b", "G2 point")),
    ({"pi_a": ["1", "2", "0"]}, CorruptFile, ("pi_a", "affine")),
    ({"pi_b": [["1", "2"], ["3", "4"], ["0", "0"]]}, CorruptFile, ("pi_b", "affine")),
    ({"pi_a": ["0x1", "2", "1"]}, CorruptFile, ("pi_a", "decimal")),
    ({"pi_a": [str(1 << 256), "2", "1"]}, CorruptFile, ("pi_a", "257 bits", "256-bit")),
])
def test_refusals_name_the_file_and_the_value(change, error, fragments):
    proof = {k: v for k, v in {**_proof(range(1, 9)), **change}.items() if v is not MISSING}
    with pytest.raises(error) as caught:
        calldata.calldata(proof, ["1"], "proof.json", "public.json")
    for fragment in fragments:
        assert fragment in str(caught.value)


@pytest.mark.parametrize("public, fragments", [
    ({"0": "1"}, ("public.json", "list")),
    (["1", "-2"], ("public.json", "[1]", "decimal")),
    (["1", True], ("public.json", "[1]")),
])
def test_public_signal_refusals(public, fragments):
    with pytest.raises(CorruptFile) as caught:
        calldata.calldata(_proof(range(1, 9)), public, "proof.json", "public.json")
    for fragment in fragments:
        assert fragment in str(caught.value)


def test_files_unreadable_or_not_json_are_refused_by_name(tmp_path):
    proof, public = tmp_path / "proof.json", tmp_path / "public.json"
    proof.write_text(json.dumps(_proof(range(1, 9))))
    public.write_text("[1, 2")
    with pytest.raises(CorruptFile, match=f"{public}: not JSON"):
        calldata.calldata_files(public, proof)
    with pytest.raises(CorruptFile, match=f"{tmp_path / 'missing.json'}: cannot read"):
        calldata.calldata_files(public, tmp_path / "missing.json")


def test_a_bundle_holds_calldata_only_on_a_curve_ethereum_verifies(tmp_path):
    assert not calldata.evm_verifiable(BLS12_381)
    g1, g2 = BLS12_381.point_class("g1")(), BLS12_381.point_class("g2")()
    bundle.write_proof(tmp_path, 0, Proof(BLS12_381, g1, g2, g1), [5, 7])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([bundle.proof_name(0), *bundle.snarkjs_names(0)])
