"""snarkjs's Groth16 verifier contract on an in-process EVM, for the Ethereum tests:
tests/ethereum/evm_verify.mjs compiles it with solcjs and calls its verifyProof in
@ethereumjs/vm (versions pinned by tests/ethereum/package-lock.json, installed by
``npm ci`` when missing).

    evm = installed()                                   # skips without node and npm
    contract = verifier_contract(toolchain, zkey, dir)  # snarkjs's export, compiled once
    contract.verify_files(public_json, proof_json)      # an EvmCall: verified, gas
"""
from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

ETHEREUM = Path(__file__).resolve().parents[1] / "ethereum"
SCRIPT = ETHEREUM / "evm_verify.mjs"
MODULES = ETHEREUM / "node_modules"
NODE_MAJOR = 20  # @ethereumjs/vm's engines


@dataclass(frozen=True)
class EvmCall:
    """One verifyProof call: what it returned, its execution gas, and whether it reverted."""
    verified: bool
    gas: int
    reverted: bool
    error: str = ""


class Evm:
    def _node(self, *args, stdin: str = "") -> str:
        proc = subprocess.run(["node", str(SCRIPT), *map(str, args)], input=stdin, capture_output=True, text=True,
                              timeout=300)
        if proc.returncode != 0:
            raise RuntimeError(f"evm_verify.mjs {' '.join(map(str, args))} exited {proc.returncode}:\n{proc.stderr}")
        return proc.stdout

    def compile(self, verifier_sol: Path, out: Path) -> Path:
        """The contract compiled (bytecode and selectors, as JSON at ``out``)."""
        self._node("compile", verifier_sol, out)
        return out

    def calls(self, compiled: Path, calldatas: list[str]) -> list[EvmCall]:
        """Deploy the compiled contract once and call verifyProof with each calldata line."""
        lines = self._node("verify", compiled, stdin="".join(f"{c.strip()}\n" for c in calldatas)).splitlines()
        if len(lines) != len(calldatas):
            raise RuntimeError(f"evm_verify.mjs answered {len(lines)} calls of {len(calldatas)}")
        return [EvmCall(**json.loads(line)) for line in lines]


@dataclass(frozen=True)
class VerifierContract:
    """snarkjs's verifier contract of one zkey, compiled."""
    evm: Evm
    sol: Path
    compiled: Path

    def calls(self, calldatas: list[str]) -> list[EvmCall]:
        return self.evm.calls(self.compiled, calldatas)

    def verify_files(self, public: Path, proof: Path) -> EvmCall:
        """verifyProof with proofflow's calldata for snarkjs's public.json and proof.json."""
        from proofflow.prover.circom import calldata
        return self.calls([calldata.calldata_files(public, proof)])[0]


def installed() -> Evm:
    """The harness, its packages installed first if missing; skips the test without node and npm."""
    if not (shutil.which("node") and shutil.which("npm")):
        pytest.skip("node and npm are not installed: the Ethereum tests run solcjs and @ethereumjs/vm on node")
    version = subprocess.run(["node", "--version"], capture_output=True, text=True, timeout=60).stdout.strip()
    if int(version.lstrip("v").split(".")[0] or 0) < NODE_MAJOR:
        pytest.skip(f"node {version} is older than {NODE_MAJOR}, which @ethereumjs/vm needs")
    if not all((MODULES / package / "package.json").exists() for package in ("solc", "@ethereumjs/vm")):
        proc = subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=ETHEREUM, capture_output=True, text=True,
                              timeout=600)
        if proc.returncode != 0:
            raise RuntimeError(f"npm ci in {ETHEREUM} failed:\n{proc.stdout}\n{proc.stderr}")
    return Evm()


def verifier_contract(toolchain, zkey: Path, directory: Path) -> VerifierContract:
    """snarkjs's Solidity verifier for ``zkey`` (``zkey export solidityverifier``), compiled."""
    evm = installed()
    directory.mkdir(parents=True, exist_ok=True)
    sol = directory / "verifier.sol"
    toolchain.snarkjs("zkey", "export", "solidityverifier", zkey, sol)
    return VerifierContract(evm, sol, evm.compile(sol, directory / "verifier.json"))
