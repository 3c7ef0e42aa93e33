"""The verification_key.json proofflow writes (a registered circuit's, a bundle's) carries the
fields of snarkjs's `zkey export verificationkey` with snarkjs's values (#36): vk_alphabeta_12,
e(α, β) as an Fq12 in snarkjs's nested layout, was missing."""
import json

import pytest

pytestmark = pytest.mark.slow

FIELDS = ("protocol", "curve", "nPublic", "vk_alpha_1", "vk_beta_2", "vk_gamma_2", "vk_delta_2", "vk_alphabeta_12",
          "IC")


@pytest.mark.parametrize("name", ["chain", "gadgets"])
def test_fields_match_snarkjs_export(ceremony, tmp_path, name):
    from proofflow.prover.circom import read_zkey, write_verification_key
    circuit = ceremony[name]
    write_verification_key(tmp_path / "vk.json", read_zkey(circuit.zkey).vk)
    ours, snarkjs = json.loads((tmp_path / "vk.json").read_text()), json.loads(circuit.vk.read_text())
    assert set(FIELDS) <= set(snarkjs), "snarkjs's export changed its fields"
    for field in FIELDS:
        assert ours.get(field) == snarkjs[field], field
    assert list(ours) == list(snarkjs)  # the same fields, in snarkjs's order
