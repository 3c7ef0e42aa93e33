"""The circom toolchain (tests/helpers/circom_toolchain.py), the test circuits compiled, and
a small real ceremony, shared by the session's circom tests."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from circom_toolchain import CIRCUITS, Toolchain, installed


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


@dataclass
class Circuit:
    """A compiled circuit with its zkey (after one contribution) and verification key."""
    toolchain: Toolchain
    name: str
    dir: Path
    r1cs: Path
    wasm: Path
    zkey: Path | None = None
    vk: Path | None = None

    def witness(self, inputs: dict, label: str = "w") -> Path:
        """A .wtns by ``snarkjs wtns calculate`` from the circuit's wasm (values may be
        nested lists); ``label`` names its files in the circuit's directory."""
        src, out = self.dir / f"{label}.input.json", self.dir / f"{label}.wtns"
        src.write_text(json.dumps({k: _decimal_strings(v) for k, v in inputs.items()}))
        self.toolchain.snarkjs("wtns", "calculate", self.wasm, src, out)
        return out


def _decimal_strings(value):
    return [_decimal_strings(v) for v in value] if isinstance(value, list) else str(value)


def _power(r1cs_paths) -> int:
    """The smallest powers-of-tau power that fits every circuit: its domain (the smallest
    power of two above nConstraints + nPublic) must be at most 2^power."""
    from proofflow.prover.circom import read_r1cs
    sizes = [read_r1cs(p) for p in r1cs_paths]
    return max((r.n_constraints + r.n_public).bit_length() for r in sizes)


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
