"""The circom toolchain, the test circuits compiled, and a small real ceremony, shared by
the session's circom tests.

The toolchain (circom2, snarkjs, circomlib; versions pinned by package-lock.json) is
installed by ``npm ci`` into tests/circom/node_modules when missing. Tests that need it
are skipped, saying why, only when node or npm is absent. circom2 runs the compiler as
WASI, which sees only the current directory and its parents: it runs from this directory
(which holds circuits/ and node_modules/), and absolute paths reach any tmp directory.
"""
from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
CIRCUITS = HERE / "circuits"
BIN = HERE / "node_modules" / ".bin"


class Toolchain:
    def run(self, *args, timeout: float = 300) -> subprocess.CompletedProcess:
        """Run a tool from this directory; a failure shows its output."""
        proc = subprocess.run([str(a) for a in args], cwd=HERE, capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(map(str, args))} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
        return proc

    def snarkjs(self, *args, check: bool = True) -> subprocess.CompletedProcess:
        if check:
            return self.run(BIN / "snarkjs", *args)
        return subprocess.run([str(BIN / "snarkjs"), *map(str, args)], cwd=HERE, capture_output=True, text=True,
                              timeout=300)

    def compile(self, source: Path, out: Path, prime: str = "bls12381") -> tuple[Path, Path]:
        """(.r1cs, .wasm) of a circuit whose includes lie in circuits/ or circomlib."""
        out.mkdir(parents=True, exist_ok=True)
        self.run(BIN / "circom2", source, "--r1cs", "--wasm", "-p", prime, "-l", "circuits", "-l", "node_modules",
                 "-o", out)
        return out / f"{source.stem}.r1cs", out / f"{source.stem}_js" / f"{source.stem}.wasm"

    def compile_chain(self, out: Path, steps: int, k: int = 1, prime: str = "bls12381") -> tuple[Path, Path]:
        """circuits/chain.circom with STEPS and K, through a main component written to ``out``."""
        out.mkdir(parents=True, exist_ok=True)
        source = out / f"chain_{steps}_{k}.circom"
        source.write_text(f'pragma circom 2.0.0;\ninclude "chain.circom";\n'
                          f"component main {{public [x]}} = Chain({steps}, {k});\n")
        return self.compile(source, out, prime)


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
    if not (shutil.which("node") and shutil.which("npm")):
        pytest.skip("node and npm are not installed: the circom tests run circom2 and snarkjs on node")
    if not all((BIN / tool).exists() for tool in ("snarkjs", "circom2")):
        proc = subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=HERE, capture_output=True, text=True,
                              timeout=600)
        if proc.returncode != 0:
            raise RuntimeError(f"npm ci in {HERE} failed:\n{proc.stdout}\n{proc.stderr}")
    return Toolchain()


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
