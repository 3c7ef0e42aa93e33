"""`circuit add --wasm` checks the wasm against the r1cs (#36): a witness generator of another
circuit, or of another prime, is refused at registration (exit 2, one line naming the wasm),
and nothing is registered; before, it registered and failed on every input at run time."""
import pytest

pytestmark = pytest.mark.slow


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("PROOFFLOW_CIRCUITS", str(tmp_path / "circuits"))
    return tmp_path


def _add(capsys, circuit, wasm) -> tuple[int, str]:
    from proofflow import cli
    rc = cli.main(["circuit", "add", "chain", "--r1cs", str(circuit.r1cs), "--zkey", str(circuit.zkey),
                   "--wasm", str(wasm)])
    return rc, capsys.readouterr().err


def _registered(home) -> list:
    return sorted(p.name for p in (home / "circuits").iterdir()) if (home / "circuits").exists() else []


def test_a_wasm_of_another_circuit_is_refused(ceremony, home, capsys):
    chain, gadgets = ceremony["chain"], ceremony["gadgets"]
    rc, err = _add(capsys, chain, gadgets.wasm)
    assert rc == 2 and _registered(home) == []
    line = err.strip().splitlines()[-1]
    assert line.startswith(f"error: {gadgets.wasm}: is not the witness generator of {chain.r1cs}")
    assert "signals" in line and "inputs" in line


def test_a_bn254_wasm_is_refused(ceremony, bn128_compiled, home, capsys):
    chain = ceremony["chain"]
    _, bn_wasm = bn128_compiled["chain"]  # the same circuit, BN254's prime
    rc, err = _add(capsys, chain, bn_wasm)
    assert rc == 2 and _registered(home) == []
    assert f"{bn_wasm}: made for the BN254 scalar field, not the BLS12-381 scalar field" in err


def test_the_circuits_own_wasm_registers(ceremony, home, capsys):
    chain = ceremony["chain"]
    rc, _ = _add(capsys, chain, chain.wasm)
    assert rc == 0 and _registered(home) == ["chain"]
