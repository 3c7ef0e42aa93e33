"""The circom toolchain (tests/helpers/circom_toolchain.py), the test circuits compiled, and
a small real ceremony, shared by the session's circom tests."""
from __future__ import annotations


import pytest

from circom_toolchain import CIRCUITS, Circuit, Toolchain, installed, power as _power


@pytest.fixture
def home_at(tmp_path, monkeypatch):
    """Makes the test's directory the home's parts (circuits, bundles, scratch, keys, a
    SQLite timing store) with the given input root; returns the directory."""
    def use(input_root):
        for var, sub in (("PROOFFLOW_CIRCUITS", "circuits"), ("PROOFFLOW_BUNDLES", "bundles"),
                         ("PROOFFLOW_SCRATCH", "scratch"), ("PROOFFLOW_PARAMS_CACHE", "params")):
            monkeypatch.setenv(var, str(tmp_path / sub))
        monkeypatch.setenv("PROOFFLOW_DB_URL", f"sqlite:///{tmp_path / 'timing.db'}")
        monkeypatch.setenv("PROOFFLOW_INPUT_ROOTS", str(input_root))
        return tmp_path
    return use


@pytest.fixture(scope="session")
def toolchain() -> Toolchain:
    return installed()


@pytest.fixture(scope="session")
def compiled(toolchain, tmp_path_factory) -> dict[str, Circuit]:
    """gadgets (circomlib: Num2Bits, LessThan, Poseidon), chain (100 steps), chain_k2 (the
    same shape with other coefficients) and arrays (array inputs), compiled, with no key."""
    root = tmp_path_factory.mktemp("circom")
    built = {"gadgets": toolchain.compile(CIRCUITS / "gadgets.circom", root / "gadgets"),
             "chain": toolchain.compile_chain(root / "chain", 100),
             "chain_k2": toolchain.compile_chain(root / "chain_k2", 100, k=2),
             "arrays": toolchain.compile(CIRCUITS / "arrays.circom", root / "arrays")}
    return {name: Circuit(toolchain, name, root / name, r1cs, wasm) for name, (r1cs, wasm) in built.items()}


@pytest.fixture(scope="session")
def ceremony(toolchain, compiled, tmp_path_factory) -> dict[str, Circuit]:
    """gadgets, chain and chain_k2 through one small powers-of-tau ceremony."""
    circuits = {name: compiled[name] for name in ("gadgets", "chain", "chain_k2")}
    root = tmp_path_factory.mktemp("ceremony")
    ptau = root / "pot.ptau"
    toolchain.snarkjs("powersoftau", "new", "bls12381", _power(c.r1cs for c in circuits.values()), root / "pot0.ptau")
    toolchain.snarkjs("powersoftau", "contribute", root / "pot0.ptau", root / "pot1.ptau", "--name=tests",
                      "-e=proofflow tests")
    toolchain.snarkjs("powersoftau", "prepare", "phase2", root / "pot1.ptau", ptau)
    for c in circuits.values():
        c.zkey, c.vk = c.dir / "c.zkey", c.dir / "verification_key.json"
        toolchain.snarkjs("groth16", "setup", c.r1cs, ptau, c.dir / "c0.zkey")
        toolchain.snarkjs("zkey", "contribute", c.dir / "c0.zkey", c.zkey, "--name=tests", "-e=proofflow tests")
        toolchain.snarkjs("zkey", "export", "verificationkey", c.zkey, c.vk)
    return circuits
