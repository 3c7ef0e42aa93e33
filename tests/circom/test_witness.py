"""Witnesses by proofflow's runner of circom's .wasm (proofflow.prover.circom.witness)
against ``snarkjs wtns calculate``, and the inputs circuits do not take."""
from __future__ import annotations

import json
import time

import pytest

from proofflow.prover import circom
from proofflow.prover.curves.bls12_381 import BLS12_381 as CURVE
from proofflow.prover.field.fr import Fr

pytest.importorskip("wasmtime", reason="the witness runner needs wasmtime")
from proofflow.prover.circom.witness import calculate_witness  # noqa: E402

fr = Fr.of(CURVE)

pytestmark = pytest.mark.slow

P = fr.MODULUS
INPUTS = {"gadgets": {"secret": 123456789, "salt": 42, "bound": 10**9}, "chain": {"x": 3, "c": 5},
          "arrays": {"m": [[1, 2, 3], [4, 5, 6]], "v": [7, 8, 9]}}


@pytest.mark.parametrize("name", INPUTS)
def test_witness_is_snarkjs_s(compiled, name):
    c = compiled[name]
    expected = circom.read_wtns(c.witness(INPUTS[name], label="witness-test"), CURVE)
    assert fr.equal(calculate_witness(c.wasm, INPUTS[name], CURVE), expected)


def test_value_forms_read_as_snarkjs_reads_them(compiled, tmp_path):
    """Decimal and 0x strings, JSON numbers and negative values (r - v), from a file."""
    c = compiled["arrays"]
    source = tmp_path / "input.json"
    source.write_text('{"m": [["1", 2, "0x1f"], ["-4", 5e0, "6"]], "v": [7, "8", -9]}')
    c.toolchain.snarkjs("wtns", "calculate", c.wasm, source, tmp_path / "w.wtns")
    ours = calculate_witness(c.wasm, source, CURVE)
    assert fr.equal(ours, circom.read_wtns(tmp_path / "w.wtns", CURVE))
    assert fr.to_ints(ours)[1:3] == [(1 * 7 + 2 * 8 - 31 * 9) % P, (-4 * 7 + 5 * 8 - 6 * 9) % P]  # out = m·v


REJECTED = [
    ("gadgets", {"secret": 2**64, "salt": 1, "bound": 5},
     r"gadgets\.wasm rejects the inputs \(an assert failed\): Error in template Num2Bits_\d+ line: \d+"),
    ("chain", {"x": 3, "c": 5, "z": 1}, r"'z' is not an input signal of chain_100_1\.wasm"),
    ("arrays", {"m": [[1, 2, 3]], "v": [7, 8, 9]}, r"input signal 'm' takes 6 values, got 3"),
    ("arrays", {"m": [[1, 2, 3], [4, 5, 6]], "v": 7}, r"input signal 'v' takes 3 values, got 1"),
    ("chain", {"x": 3}, r"sets 1 of the 2 input values of chain_100_1\.wasm"),
]


@pytest.mark.parametrize("name, inputs, message", REJECTED,
                         ids=["assert", "unknown signal", "short array", "scalar for an array", "missing input"])
def test_rejected_inputs_name_the_file_and_what_the_circuit_said(compiled, tmp_path, name, inputs, message):
    c = compiled[name]
    source = tmp_path / "input.json"
    source.write_text(json.dumps(inputs))
    with pytest.raises(circom.InputRejected, match=f"^{source}: {message}") as exc:
        calculate_witness(c.wasm, source, CURVE)
    assert exc.value.source == str(source)
    assert list(tmp_path.iterdir()) == [source]  # nothing written
    with pytest.raises(circom.InputRejected, match=f"^{message}"):  # given as a dict: no file to name
        calculate_witness(c.wasm, inputs, CURVE)
    # snarkjs rejects them too
    assert c.toolchain.snarkjs("wtns", "calculate", c.wasm, source, tmp_path / "w.wtns", check=False).returncode


@pytest.mark.parametrize("value, message", [
    (str(P), "input signal 'x': an integer of 255 bits is not below the field's prime r (255 bits) in absolute value "
             "(inputs are not reduced)"),
    (-P, "input signal 'x': an integer of 255 bits is not below the field's prime r (255 bits) in absolute value "
         "(inputs are not reduced)"),
    ("12a", "input signal 'x': expected an integer (a decimal or 0x string of at most 256 digits, a JSON number, "
            "or a nested array of them), got a string of 3 characters"),
    (1.5, "input signal 'x': expected an integer (a decimal or 0x string of at most 256 digits, a JSON number, "
          "or a nested array of them), got a number that is not an integer"),
    ({"a": 1}, "input signal 'x': expected an integer (a decimal or 0x string of at most 256 digits, a JSON number, "
               "or a nested array of them), got an object of 1 member")],
    ids=["r", "-r", "not a number", "a fraction", "an object"])
def test_values_outside_the_field_or_not_integers(compiled, value, message):
    """snarkjs reduces a value at or above r silently; here it is an error, which names the
    signal and what its value is, never the value (tests/security/test_inputs_stay_under_roots.py)."""
    with pytest.raises(circom.InputRejected) as exc:
        calculate_witness(compiled["chain"].wasm, {"x": value, "c": 5}, CURVE)
    assert str(exc.value) == message


def test_generator_of_another_prime_or_not_one(bn128_compiled, tmp_path):
    _, wasm = bn128_compiled["chain"]
    with pytest.raises(circom.WrongField, match="BN254 scalar field, not the BLS12-381 scalar field") as exc:
        calculate_witness(wasm, {"x": 3, "c": 5}, CURVE)
    assert exc.value.path == str(wasm)
    junk = tmp_path / "junk.wasm"
    junk.write_bytes(b"\0asm junk")
    with pytest.raises(circom.CorruptFile, match="junk.wasm: is not a WebAssembly module"):
        calculate_witness(junk, {"x": 3}, CURVE)


def test_witness_time_of_a_few_thousand_constraints(toolchain, tmp_path, capsys):
    """Information only: the chain circuit at 4093 constraints, ours against snarkjs's."""
    r1cs, wasm = toolchain.compile_chain(tmp_path, 4093)
    start = time.perf_counter()
    ours = calculate_witness(wasm, {"x": 3, "c": 5}, CURVE)
    elapsed = time.perf_counter() - start
    source = tmp_path / "input.json"
    source.write_text('{"x": "3", "c": "5"}')
    start = time.perf_counter()
    toolchain.snarkjs("wtns", "calculate", wasm, source, tmp_path / "w.wtns")
    theirs = time.perf_counter() - start
    assert fr.equal(ours, circom.read_wtns(tmp_path / "w.wtns", CURVE))
    with capsys.disabled():
        print(f"\nwitness of chain, {circom.read_r1cs(r1cs).n_constraints} constraints: proofflow (wasmtime) "
              f"{elapsed:.2f} s, snarkjs wtns calculate {theirs:.2f} s (with node's start)")
