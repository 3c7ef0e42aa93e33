"""A circuit on BN254 through a small real snarkjs ceremony, and its verifier contract compiled
for the in-process EVM (tests/helpers/evm.py), each made once per session when a test asks.

The circuit is circuits/chain.circom (tests/circom) compiled with ``circom2 -p bn128``:
public signals [y, x]. The ceremony's power is the smallest the circuit fits.
"""
from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path

import pytest

import evm
from circom_toolchain import Toolchain, installed

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


def _power(r1cs: Path) -> int:
    """The smallest powers-of-tau power whose domain holds nConstraints + nPublic, from the
    r1cs's header (read here as bytes: proofflow's reader takes registered curves only)."""
    from proofflow.prover.circom import binfile
    head = binfile.read(r1cs, "r1cs", max_version=1).section(1, "header")
    n8 = int.from_bytes(head[:4], "little")
    _, n_out, n_pub, _ = struct.unpack_from("<4I", head, 4 + n8)
    (n_constraints,) = struct.unpack_from("<I", head, 4 + n8 + 16 + 8)
    return (n_constraints + n_out + n_pub).bit_length()


@pytest.fixture(scope="session")
def toolchain() -> Toolchain:
    return installed()


@pytest.fixture(scope="session")
def bn128_chain(toolchain, tmp_path_factory) -> Bn128Circuit:
    root = tmp_path_factory.mktemp("bn128")
    r1cs, wasm = toolchain.compile_chain(root, CHAIN_STEPS, prime="bn128")
    toolchain.snarkjs("powersoftau", "new", "bn128", _power(r1cs), root / "pot0.ptau")
    toolchain.snarkjs("powersoftau", "contribute", root / "pot0.ptau", root / "pot1.ptau", "--name=tests",
                      "-e=proofflow tests")
    toolchain.snarkjs("powersoftau", "prepare", "phase2", root / "pot1.ptau", root / "pot.ptau")
    toolchain.snarkjs("groth16", "setup", r1cs, root / "pot.ptau", root / "c0.zkey")
    zkey, vk = root / "c.zkey", root / "verification_key.json"
    toolchain.snarkjs("zkey", "contribute", root / "c0.zkey", zkey, "--name=tests", "-e=proofflow tests")
    toolchain.snarkjs("zkey", "export", "verificationkey", zkey, vk)
    return Bn128Circuit(toolchain, root, r1cs, wasm, zkey, vk)


@pytest.fixture(scope="session")
def contract(toolchain, bn128_chain) -> evm.VerifierContract:
    """snarkjs's verifier contract for the circuit's zkey, compiled once."""
    return evm.verifier_contract(toolchain, bn128_chain.zkey, bn128_chain.dir / "contract")
