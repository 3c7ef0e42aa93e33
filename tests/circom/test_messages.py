"""What a user reads when a registered circuit refuses an input, or a zkey is another
circuit's (#36): the input file named once (not "input X: X: ..."), the circuit by its name
(not the registry's copy, circuit.wasm), and grammatical ("the coefficients differs" was not)."""
import json

import pytest

pytestmark = pytest.mark.slow


@pytest.fixture
def home(tmp_path, monkeypatch):
    for var, sub in (("PROOFFLOW_CIRCUITS", "circuits"), ("PROOFFLOW_SCRATCH", "scratch")):
        monkeypatch.setenv(var, str(tmp_path / sub))
    monkeypatch.setenv("PROOFFLOW_INPUT_ROOTS", str(tmp_path))
    return tmp_path


@pytest.mark.parametrize("inputs, said", [
    ({"secret": 2**64, "salt": 1, "bound": 5}, "circuit 'gadgets' rejects the inputs (an assert failed)"),
    ({"secret": 1, "salt": 1}, "sets 2 of the 3 input values of circuit 'gadgets'"),
    ({"nosuchsignal": "1"}, "'nosuchsignal' is not an input signal of circuit 'gadgets'"),
], ids=["assert", "missing input", "unknown signal"])
def test_a_refused_input_names_the_file_once_and_the_circuit(ceremony, home, inputs, said):
    from proofflow.prover import pipeline
    from proofflow.prover.circom import registry
    from proofflow.prover.circuits.by_name import get_circuit
    from proofflow.prover.staging.shared import SharedStaging
    gadgets = ceremony["gadgets"]
    registry.add("gadgets", gadgets.r1cs, gadgets.zkey, gadgets.wasm)
    bad = home / "bad-input.json"
    bad.write_text(json.dumps(inputs))
    circuit = get_circuit("gadgets", registry.get("gadgets")["log2"])
    with pytest.raises(pipeline.InputError) as caught:
        pipeline.synthesize_shared(circuit, 0, 0, SharedStaging.from_settings(), "d/r/p0000", input=str(bad))
    message = str(caught.value)
    assert message.startswith(f"input {bad}: {said}")
    assert message.count(bad.name) == 1 and "circuit.wasm" not in message


def test_a_zkey_of_other_coefficients_is_named_in_plain_words(ceremony):
    from proofflow.prover.circom import KeyMismatch, read_r1cs, read_zkey
    with pytest.raises(KeyMismatch) as caught:
        read_zkey(ceremony["chain_k2"].zkey).check_matches(read_r1cs(ceremony["chain"].r1cs))
    assert str(caught.value) == ("the zkey does not match the r1cs: matrix A differs (its coefficients, first at "
                                 "constraint 0)")
