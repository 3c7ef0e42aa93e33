"""Finding 2 (its JSON bullets): "Nested JSON raises RecursionError; an integer over 4,300
digits raises a raw ValueError; `verify --public deep.json` prints a traceback and exits 1."

Every JSON a user hands proofflow goes through one bounded reader
(proofflow/prover/bounded_json.py): at most PROOFFLOW_JSON_MAX_BYTES, checked before
reading; nesting at most 64 deep; integers of at most 256 digits. Inputs get InputRejected,
snarkjs's files CorruptFile (exit 2, one line, at the command line), pending work files go
to rejected/ with the reason; input objects given inline are bounded the same way."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

DEEP = 100_000  # far past Python's recursion limit
LONG = "9" * 5000  # past Python's 4,300-digit limit of int() on decimal text
CURVE = "bls12_381"


@pytest.fixture
def curve():
    from proofflow.prover.curves import registry
    return registry.get_curve(CURVE)


def _witness(inputs, curve, tmp_path):
    """calculate_witness of ``inputs``; the inputs are checked before the generator (absent
    here) is loaded."""
    from proofflow.prover.circom.witness import calculate_witness
    return calculate_witness(tmp_path / "no-generator.wasm", inputs, curve)


def _nested(depth: int):
    value = ["1"]
    for _ in range(depth - 1):
        value = [value]
    return value


@pytest.mark.parametrize("text, bound", [
    ('{"x": ' + "[" * DEEP + "]" * DEEP + "}", "nested more than 64 deep"),
    ("{" + '"x": {' * DEEP + "}" * DEEP + "}", "nested more than 64 deep"),
    ('{"x": ' + LONG + "}", "an integer of 5000 digits: more than the 256"),
    ('{"x": "' + LONG + '"}', "input signal 'x': expected an integer (a decimal or 0x string of at most 256 digits"),
    ('{"x": "-' + LONG + '"}', "got a string of 5001 characters"),
    ('{"x": NaN}', "NaN: not a JSON number"),
], ids=["deep arrays", "deep objects", "long number", "long string", "long negative string", "NaN"])
def test_an_input_file_beyond_the_bounds_is_input_rejected(text, bound, curve, tmp_path):
    from proofflow.prover.circom.errors import InputRejected
    path = tmp_path / "input.json"
    path.write_text(text)
    with pytest.raises(InputRejected) as exc:
        _witness(path, curve, tmp_path)
    assert bound in str(exc.value) and str(exc.value).startswith(f"{path}: ")
    assert "set_int_max_str_digits" not in str(exc.value) and len(str(exc.value)) < 400


@pytest.mark.parametrize("inputs, bound", [
    ({"x": _nested(5000)}, "input signal 'x[0][0]"),
    ({"x": LONG}, "got a string of 5000 characters"),
    ({"x": int(LONG[:4000])}, "an integer of 13288 bits is not below the field's prime r (255 bits)"),
], ids=["deep", "long string", "long integer"])
def test_an_input_object_beyond_the_bounds_is_input_rejected(inputs, bound, curve, tmp_path):
    """Input objects come in a run's params, parsed by Airflow: the same bounds hold."""
    from proofflow.prover.circom.errors import InputRejected
    with pytest.raises(InputRejected, match="^input signal 'x") as exc:
        _witness(inputs, curve, tmp_path)
    assert bound in str(exc.value) and len(str(exc.value)) < 400


def test_a_file_larger_than_the_bound_is_refused_unread(curve, tmp_path, monkeypatch):
    from proofflow.prover.circom.errors import InputRejected
    big = tmp_path / "big.json"
    with open(big, "wb") as f:  # sparse: 16 MiB and a byte, of nothing
        f.truncate((16 << 20) + 1)
    with pytest.raises(InputRejected, match="16777217 bytes: more than the 16777216 a JSON file may hold "
                                            r"\(PROOFFLOW_JSON_MAX_BYTES\)"):
        _witness(big, curve, tmp_path)
    small = tmp_path / "small.json"
    small.write_text(json.dumps({"x": "1", "pad": " " * 2000}))
    monkeypatch.setenv("PROOFFLOW_JSON_MAX_BYTES", "1000")
    with pytest.raises(InputRejected, match="more than the 1000 a JSON file may hold"):
        _witness(small, curve, tmp_path)


def test_the_nesting_bound_counts_arrays_and_objects_not_brackets_in_strings(tmp_path):
    from proofflow.prover import bounded_json
    ok = {"s": "[[[[" * 100 + "\\\"]]]]", "a": _nested(63)}  # brackets inside strings are text
    path = tmp_path / "ok.json"
    path.write_text(json.dumps(ok))
    assert bounded_json.load(path) == ok
    for text in ("[" * 65 + "]" * 65, '{"a": ' * 65 + "1" + "}" * 65, '["]]]]]]", ' + "[" * 64 + "]" * 65):
        path.write_text(text)
        with pytest.raises(bounded_json.JsonRefused, match="nested more than 64 deep"):
            bounded_json.load(path)


@pytest.fixture
def snarkjs_files(tmp_path, curve):
    """A verification key snarkjs's verify takes (every point at infinity), and a proof file."""
    from proofflow.prover.circom import snarkjs_json
    from proofflow.prover.groth16.data_structures import VerifyingKey
    g1, g2 = curve.point_class("g1").identity(), curve.point_class("g2").identity()
    vk = tmp_path / "verification_key.json"
    snarkjs_json.write_verification_key(vk, VerifyingKey(curve, g1, g2, g2, g2, [g1, g1]))
    proof = tmp_path / "proof.json"
    proof.write_text("{}")
    return vk, proof


def test_verify_public_deep_json_is_one_line_and_exit_2(snarkjs_files, tmp_path):
    vk, proof = snarkjs_files
    deep = tmp_path / "deep.json"
    deep.write_text("[" * DEEP + "]" * DEEP)
    out = subprocess.run([sys.executable, "-m", "proofflow.prover", "verify", "--vk", str(vk), "--public", str(deep),
                          "--proof", str(proof)], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert out.returncode == 2, out.stderr[-2000:]
    assert out.stderr == f"error: {deep}: arrays and objects nested more than 64 deep\n" and out.stdout == ""


@pytest.mark.parametrize("public, message", [
    (f'["{LONG}"]', "[0]: a string of 5000 characters is not a non-negative decimal number of at most 256 digits"),
    (f"[{LONG}]", "an integer of 5000 digits: more than the 256 any field element needs"),
], ids=["long string", "long number"])
def test_verify_public_refuses_long_integers_naming_only_their_length(public, message, snarkjs_files, tmp_path,
                                                                     capsys):
    from proofflow.prover import cli
    vk, proof = snarkjs_files
    path = tmp_path / "public.json"
    path.write_text(public)
    assert cli.main(["verify", "--vk", str(vk), "--public", str(path), "--proof", str(proof)]) == cli.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err == f"error: {path}: {message}\n"


def test_hostile_pending_files_are_rejected_with_the_reason(tmp_path, monkeypatch):
    from proofflow.airflow.pending import claim
    d = tmp_path / "pending"
    d.mkdir()
    (d / "deep.json").write_text("[" * DEEP + "]" * DEEP)
    (d / "long.json").write_text('{"seed": ' + LONG + "}")
    (d / "big.json").write_text(json.dumps({"log2": 8, "pad": " " * 500_000}))
    (d / "fine.json").write_text(json.dumps({"log2": 8, "partitions": 1}))
    monkeypatch.setenv("PROOFFLOW_JSON_MAX_BYTES", "300000")
    assert claim(d) == [{"log2": 8, "partitions": 1}]
    reasons = {p.name: p.read_text() for p in (d / "rejected").glob("*.error")}
    assert reasons == {"deep.json.error": "arrays and objects nested more than 64 deep\n",
                       "long.json.error": "an integer of 5000 digits: more than the 256 any field element needs\n",
                       "big.json.error": "500022 bytes: more than the 300000 a JSON file may hold "
                                         "(PROOFFLOW_JSON_MAX_BYTES)\n"}
