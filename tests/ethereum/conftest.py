"""Circuits on BN254 through one small real snarkjs ceremony, and their verifier contracts
compiled for the in-process EVM (tests/helpers/evm.py), each made once per session when a test asks.

The circuits come from tests/circom, compiled with ``circom2 -p bn128``: circuits/chain.circom
(public signals [y, x]) and circuits/gadgets.circom (circomlib's Num2Bits, LessThan and
Poseidon; --O2, so that it fits 2^9). The ceremony's power is the smallest both fit.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

import evm
from circom_toolchain import CIRCUITS, Toolchain, installed, power

CHAIN_STEPS = 20


@dataclass
class Bn128Circuit:
    toolchain: Toolchain
    dir: Path
    r1cs: Path
    wasm: Path
    zkey: Path
    vk: Path

    def witness(self, inputs: dict, label: str) -> Path:
        """A .wtns by ``snarkjs wtns calculate``; ``label`` names its files in the circuit's directory."""
        src, out = self.dir / f"{label}.input.json", self.dir / f"{label}.wtns"
        src.write_text(json.dumps({k: str(v) for k, v in inputs.items()}))
        self.toolchain.snarkjs("wtns", "calculate", self.wasm, src, out)
        return out

    def snarkjs_proof(self, inputs: dict, label: str) -> tuple[Path, Path]:
        """(public.json, proof.json) by ``snarkjs groth16 prove``, in a directory named ``label``."""
        d = self.dir / label
        d.mkdir()
        public, proof = d / "public.json", d / "proof.json"
        self.toolchain.snarkjs("groth16", "prove", self.zkey, self.witness(inputs, label), proof, public)
        return public, proof


@pytest.fixture(scope="session")
def toolchain() -> Toolchain:
    return installed()


@pytest.fixture(scope="session")
def bn128_compiled(toolchain, tmp_path_factory) -> dict[str, tuple[Path, Path]]:
    """(.r1cs, .wasm) of each circuit, by name, each in a directory of its own."""
    root = tmp_path_factory.mktemp("bn128")
    return {"chain": toolchain.compile_chain(root / "chain", CHAIN_STEPS, prime="bn128"),
            "gadgets": toolchain.compile(CIRCUITS / "gadgets.circom", root / "gadgets", prime="bn128",
                                         flags=("--O2",))}


@pytest.fixture(scope="session")
def bn128_ptau(toolchain, bn128_compiled, tmp_path_factory) -> Path:
    """A powers-of-tau ceremony on bn128 with one contribution, prepared for phase 2."""
    root = tmp_path_factory.mktemp("bn128-ptau")
    toolchain.snarkjs("powersoftau", "new", "bn128", power(r1cs for r1cs, _ in bn128_compiled.values()),
                      root / "pot0.ptau")
    toolchain.snarkjs("powersoftau", "contribute", root / "pot0.ptau", root / "pot1.ptau", "--name=tests",
                      "-e=proofflow tests")
    toolchain.snarkjs("powersoftau", "prepare", "phase2", root / "pot1.ptau", root / "pot.ptau")
    return root / "pot.ptau"


def _keyed(toolchain, compiled: tuple[Path, Path], ptau: Path) -> Bn128Circuit:
    """A compiled circuit's Groth16 setup on the ceremony, one contribution, its verification key."""
    r1cs, wasm = compiled
    root = r1cs.parent
    toolchain.snarkjs("groth16", "setup", r1cs, ptau, root / "c0.zkey")
    zkey, vk = root / "c.zkey", root / "verification_key.json"
    toolchain.snarkjs("zkey", "contribute", root / "c0.zkey", zkey, "--name=tests", "-e=proofflow tests")
    toolchain.snarkjs("zkey", "export", "verificationkey", zkey, vk)
    return Bn128Circuit(toolchain, root, r1cs, wasm, zkey, vk)


@pytest.fixture(scope="session")
def bn128_chain(toolchain, bn128_compiled, bn128_ptau) -> Bn128Circuit:
    return _keyed(toolchain, bn128_compiled["chain"], bn128_ptau)


@pytest.fixture(scope="session")
def bn128_gadgets(toolchain, bn128_compiled, bn128_ptau) -> Bn128Circuit:
    return _keyed(toolchain, bn128_compiled["gadgets"], bn128_ptau)


@pytest.fixture(scope="session")
def contract(toolchain, bn128_chain) -> evm.VerifierContract:
    """snarkjs's verifier contract for the circuit's zkey, compiled once."""
    return evm.verifier_contract(toolchain, bn128_chain.zkey, bn128_chain.dir / "contract")
