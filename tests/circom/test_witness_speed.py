"""Witnesses at native speed (#36, item 3): the wasm generator compiled once per circuit
(kept in the process and on disk), witnesses of concurrent threads the same as sequential
ones, and circom's C++ generator (``circom --c``), registered with a circuit, used instead
of the wasm with the same witness; a generator that fails names the circuit."""
from __future__ import annotations

import json
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from proofflow.prover.curves.bls12_381 import BLS12_381 as CURVE
from proofflow.prover.field.fr import Fr
from circom_toolchain import cpp_toolchain_missing

pytest.importorskip("wasmtime", reason="the witness runner needs wasmtime")
from proofflow.prover.circom import witness  # noqa: E402
from proofflow.prover.circom.errors import GeneratorFailed  # noqa: E402

pytestmark = pytest.mark.slow
fr = Fr.of(CURVE)
BIN = Path(__file__).resolve().parent / "node_modules" / ".bin"


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    """An empty disk cache and a process cache that has seen no module: a new process's."""
    monkeypatch.setenv("PROOFFLOW_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(witness, "MODULES", witness.ModuleCache())
    return tmp_path / "cache"


def test_a_circuits_module_is_compiled_once_then_reused_and_loaded_from_disk(compiled, fresh_cache, monkeypatch):
    wasm = compiled["chain"].wasm
    first = witness.calculate_witness(wasm, {"x": 3, "c": 5}, CURVE)
    assert witness.MODULES.counts == witness.CacheCounts(compiled=1, loaded=0, reused=0)
    second = witness.calculate_witness(wasm, {"x": 4, "c": 5}, CURVE)
    assert witness.MODULES.counts == witness.CacheCounts(compiled=1, loaded=0, reused=1)  # not compiled again
    assert not fr.equal(first, second)
    (stored,) = (fresh_cache / "wasm").iterdir()
    assert stored.suffix == ".cwasm" and (fresh_cache / "wasm").stat().st_mode & 0o077 == 0

    monkeypatch.setattr(witness, "MODULES", witness.ModuleCache())  # the next process: loaded, not compiled
    assert fr.equal(witness.calculate_witness(wasm, {"x": 3, "c": 5}, CURVE), first)
    assert witness.MODULES.counts == witness.CacheCounts(compiled=0, loaded=1, reused=0)

    stored.write_bytes(b"damaged")  # a cache file it cannot load: compiled again, and stored again
    monkeypatch.setattr(witness, "MODULES", witness.ModuleCache())
    assert fr.equal(witness.calculate_witness(wasm, {"x": 3, "c": 5}, CURVE), first)
    assert witness.MODULES.counts == witness.CacheCounts(compiled=1, loaded=0, reused=0)
    assert stored.read_bytes() != b"damaged"


def test_a_changed_wasm_at_the_same_path_is_compiled_anew(compiled, fresh_cache, tmp_path):
    wasm = tmp_path / "circuit.wasm"
    shutil.copyfile(compiled["chain"].wasm, wasm)
    chain = witness.calculate_witness(wasm, {"x": 3, "c": 5}, CURVE)
    shutil.copyfile(compiled["chain_k2"].wasm, wasm)  # a replaced registration's copy
    k2 = witness.calculate_witness(wasm, {"x": 3, "c": 5}, CURVE)
    assert witness.MODULES.counts.compiled == 2 and not fr.equal(chain, k2)


def test_concurrent_witnesses_equal_sequential_ones(compiled, fresh_cache):
    jobs = [(name, {"x": x, "c": 5}) for x in range(6) for name in ("chain", "chain_k2")]
    jobs += [("arrays", {"m": [[x, 2, 3], [4, 5, x]], "v": [7, 8, 9]}) for x in range(4)]
    one_by_one = [witness.calculate_witness(compiled[name].wasm, inputs, CURVE) for name, inputs in jobs]
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(lambda job: witness.calculate_witness(compiled[job[0]].wasm, job[1], CURVE), jobs))
    assert all(fr.equal(a, b) for a, b in zip(one_by_one, together, strict=True))
    assert witness.MODULES.counts.compiled == 3  # one per circuit, whichever thread came first


# ---- circom's C++ generator ----

@pytest.fixture(scope="module")
def cpp(toolchain, compiled, tmp_path_factory):
    """chain (100 steps) and arrays through circom --c, built with make; chain_50's files."""
    if missing := cpp_toolchain_missing():
        pytest.skip(f"circom's C++ witness generators cannot be built: {missing}")
    from proofflow.prover.circom import native_witness
    root = tmp_path_factory.mktemp("cpp")
    chain = root / "chain_100_1.circom"
    chain.write_text('pragma circom 2.0.0;\ninclude "chain.circom";\ncomponent main {public [x]} = Chain(100, 1);\n')
    out = {}
    for name, source in (("chain", chain), ("arrays", Path(__file__).parent / "circuits" / "arrays.circom")):
        toolchain.run(BIN / "circom2", source, "--c", "-p", "bls12381", "-l", "circuits", "-l", "node_modules",
                      "-o", root)
        build = root / f"{source.stem}_cpp"
        if name == "arrays":  # circom's runtime objects are the same for a prime: chain's, newer than the sources
            for runtime in ("main.o", "calcwit.o", "fr.o", "fr_asm.o"):
                shutil.copyfile(out["chain"].parent / runtime, build / runtime)
        out[name] = native_witness.build(build)
    out["chain_50"] = toolchain.compile_chain(root / "chain_50", 50)
    return out


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("PROOFFLOW_CIRCUITS", str(tmp_path / "circuits"))
    monkeypatch.setenv("PROOFFLOW_INPUT_ROOTS", str(tmp_path))
    return tmp_path


def _register(name, r1cs, wasm, generator, home):
    from proofflow.prover.circom import read_r1cs, registry, write_test_zkey
    zkey = home / f"{name}.zkey"
    write_test_zkey(read_r1cs(r1cs, CURVE), 1, zkey)
    return registry.add(name, r1cs, zkey, wasm, generator_path=generator)


def test_the_cpp_generator_is_used_and_gives_the_wasms_witness(compiled, cpp, home, monkeypatch):
    from proofflow.prover.circom.circuit import RegisteredCircuit
    for name, inputs in (("chain", {"x": 3, "c": -5}), ("arrays", {"m": [[1, "0x1f", 3], [-4, 5, 6]], "v": [7, 8, 9]})):
        info = _register(name, compiled[name].r1cs, compiled[name].wasm, cpp[name], home)
        assert info["witness_generator"] and set(info["files"]) >= {"witness-generator", "witness-generator.dat"}
        circuit = RegisteredCircuit(name)
        source = home / f"{name}.json"
        source.write_text(json.dumps(inputs))
        with monkeypatch.context() as m:
            m.setattr(witness, "calculate_witness", None)  # the wasm is not run
            ours = circuit.witness(str(source))
        assert fr.equal(ours, witness.calculate_witness(compiled[name].wasm, inputs, CURVE))
        assert fr.equal(circuit.witness(inputs), ours)


def test_a_failing_or_wrong_generator_names_the_circuit(compiled, cpp, home):
    from proofflow.prover.circom.circuit import RegisteredCircuit
    chain_50_r1cs, chain_50_wasm = cpp["chain_50"]
    _register("short", chain_50_r1cs, chain_50_wasm, cpp["chain"], home)  # chain_100's generator
    with pytest.raises(GeneratorFailed, match=r"^circuit 'short': its C\+\+ witness generator wrote a witness of 103 "
                                              r"values; the circuit has 53 \(a generator of another circuit\?\)$"):
        RegisteredCircuit("short").witness({"x": 3, "c": 5})

    _register("chain", compiled["chain"].r1cs, compiled["chain"].wasm, cpp["chain"], home)
    circuit = RegisteredCircuit("chain")
    with pytest.raises(GeneratorFailed, match=r"^circuit 'chain': its C\+\+ witness generator failed on the inputs "
                                              r"\(killed by SIGABRT\): .*Not all inputs have been set"):
        circuit.witness({"x": 3})
    (circuit.dir / "witness-generator.dat").write_bytes(b"")  # a crash
    with pytest.raises(GeneratorFailed, match=r"^circuit 'chain': its C\+\+ witness generator failed on the inputs "
                                              r"\((killed by SIG[A-Z]+|exit status \d+)\)"):
        circuit.witness({"x": 3, "c": 5})


def test_registering_a_generator_checks_it(compiled, cpp, home, tmp_path):
    from proofflow.prover.circom import registry
    from proofflow.prover.circom.errors import CorruptFile
    chain = compiled["chain"]
    with pytest.raises(registry.RegistrationError, match=r"registered with the circuit's \.wasm \(--wasm\)"):
        _register("chain", chain.r1cs, None, cpp["chain"], home)
    with pytest.raises(CorruptFile, match=r"chain_100_1\.wasm: is not a program \(no ELF header\)"):
        _register("chain", chain.r1cs, chain.wasm, chain.wasm, home)
    lone = tmp_path / "lone"
    shutil.copyfile(cpp["chain"], lone)
    with pytest.raises(CorruptFile, match=r"lone: has no lone\.dat beside it"):
        _register("chain", chain.r1cs, chain.wasm, lone, home)
