"""bench.circom_family (its runs at 2^16 and up are the benchmark): K sized to fill a domain,
inputs that give the public signals computed without the circuit (circomlib's Poseidon and a
sparse Merkle tree, hashlib's SHA-256, the chain), and, with the circom toolchain of
tests/circom, the smallest circuits compiled and witnessed by snarkjs and by proofflow, and one
proved by both, each proof verified by the other side, into a results file."""
from __future__ import annotations

import json
import shutil

import pytest

from bench import circom_family as cf
from bench import circom_inputs
from bench.snarkjs import write_chain_r1cs
from proofflow import settings


def test_k_fills_the_domain_and_no_more():
    merkle1, merkle2 = cf.R1csHeader(10420, 10500, 1), cf.R1csHeader(20840, 21000, 1)
    k = cf.choose_k(merkle1, merkle2, 16)
    assert k == 6 and 10420 * k + 1 + 1 <= 1 << 16 < 10420 * (k + 1) + 1 + 1
    chain1, chain2 = cf.R1csHeader(1, 4, 2), cf.R1csHeader(2, 5, 2)
    assert cf.choose_k(chain1, chain2, 10) == 1021  # 1021 + 2 public + the one: 2^10
    assert cf.R1csHeader(1021, 1024, 2).log2 == 10 and cf.R1csHeader(1022, 1025, 2).log2 == 11
    sha1, sha2 = cf.R1csHeader(31266, 31000, 2), cf.R1csHeader(62530, 62000, 2)
    with pytest.raises(ValueError, match="too small"):
        cf.choose_k(sha1, sha2, 14)
    with pytest.raises(ValueError, match="public signals grow"):
        cf.choose_k(sha1, cf.R1csHeader(62530, 62000, 3), 16)


def test_r1cs_header_reads_the_counts_alone(tmp_path):
    path = tmp_path / "chain.r1cs"
    write_chain_r1cs(path, 10)
    assert cf.r1cs_header(path) == cf.R1csHeader(1021, 1024, 2)  # bench.snarkjs's chain: y out, x public in


def test_sparse_tree_paths_reach_the_root_of_the_dense_tree():
    p = 2**61 - 1
    h = lambda a, b: (a * 1000003 + b * 999983 + 17) ** 3 % p  # noqa: E731 (any hash that tells order apart)
    depth, leaves = 4, {3: 11, 4: 12, 15: 13}
    level = [leaves.get(i, 0) for i in range(1 << depth)]
    while len(level) > 1:
        level = [h(level[i], level[i + 1]) for i in range(0, len(level), 2)]
    tree = circom_inputs.SparseTree(depth, leaves, h)
    assert tree.root == level[0]
    for position, leaf in leaves.items():
        node = leaf
        for sibling, bit in zip(*tree.path(position)):
            node = h(sibling, node) if bit else h(node, sibling)
        assert node == tree.root


def test_sha256_message_pads_to_k_blocks():
    for k in (1, 3):
        inputs, digest = circom_inputs.sha256(k, seed=1)
        assert len(inputs["message"]) == 512 * k - 72 and set(inputs["message"]) == {0, 1}
        assert len(digest) == 2 and all(0 <= d < 2**128 for d in digest)


# -- with the circom toolchain ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def toolchain():
    if not shutil.which("node"):
        pytest.skip("node is not installed: circom2 and snarkjs run on node")
    missing = [str(p) for p in (cf.SNARKJS, cf.CIRCOM) if not p.exists()]
    if missing:
        pytest.skip(f"no circom toolchain ({', '.join(missing)}): npm ci --prefix tests/circom")


@pytest.fixture(scope="module")
def merkle_run(toolchain, tmp_path_factory):
    """merkle at K = 2, depth 3 (3126 constraints, 2^12) through the whole benchmark, files kept."""
    root = tmp_path_factory.mktemp("circom-family")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PROOFFLOW_HOME", str(root / "home"))
        mp.setenv("PROOFFLOW_INPUT_ROOTS", str(root / "work"))
        argv = ["--k", "merkle=2", "--depth", "3", "--repeats", "1", "--snarkjs-repeats", "1", "--witness-repeats", "1",
                "--work", str(root / "work"), "--out", str(root / "out.json")]
        try:
            first = cf.main([*argv, "--keep"])
            shutil.copy(root / "work" / "merkle-d3-k2" / "build" / "main_js" / "main.wasm", root / "merkle.wasm")
            yield first, cf.main(argv), root
        finally:
            mp.undo()
            settings.reload()


def test_merkle_proved_by_both_and_each_verified_by_the_other(merkle_run):
    first, resumed, root = merkle_run
    result = json.loads((root / "out.json").read_text())
    for key in ("environment", "snarkjs", "circom", "node", "circom_flags"):
        assert result[key], key
    assert result["backend"] == "cpu"
    c = result["circuits"]["merkle-2p12"]
    assert (c["family"], c["k"], c["depth"], c["constraints"], c["public"], c["log2"]) == ("merkle", 2, 3, 3126, 1, 12)
    for tool in ("snarkjs", "proofflow"):
        assert 0 < c["witness_s"][tool]["min"] <= c["witness_s"][tool]["median"]
    for timing in ("proofflow_s", "snarkjs_s"):
        assert 0 < c[timing]["min"] <= c[timing]["median"]
    assert c["ratio"] > 0 and c["end_to_end_ratio"] > 0 and c["test_zkey_s"] > 0 and c["compile_s"] > 0
    assert "msm" in c["proofflow_phases_s"]
    assert c["witness_s"]["proofflow"]["cpu_median"] > 0 and c["synthesis_cpu_s"] > 0
    assert c["witness_abc_core_s"] == round(c["witness_s"]["proofflow"]["cpu_median"] + c["synthesis_cpu_s"], 4)
    for check in ("witness_equal", "witness_public_matches_expected", "snarkjs_verifies_proofflow",
                  "proofflow_verifies_snarkjs", "public_equal", "public_matches_expected"):
        assert c[check] is True, check
    # the Python tree's root is the circuit's public output, in both proofs
    expected = json.loads((root / "work" / "merkle-d3-k2" / "expected.public.json").read_text())
    assert json.loads((root / "work" / "merkle-d3-k2" / "snarkjs" / "public.json").read_text()) == expected
    # a second run finds every step recorded: the same results, and the large files gone
    assert resumed["circuits"]["merkle-2p12"] == first["circuits"]["merkle-2p12"] == c
    assert not (root / "work" / "merkle-d3-k2" / "build").exists()


def test_a_path_to_another_root_is_refused_by_the_merkle_circuit(merkle_run):
    from proofflow.prover.circom import InputRejected
    from proofflow.prover.circom.witness import calculate_witness
    inputs, _ = circom_inputs.merkle(2, 3, cf.fr.MODULUS, cf.POSEIDON_CONSTANTS, cf.SEED)
    wasm = merkle_run[2] / "merkle.wasm"
    calculate_witness(wasm, inputs, cf.CURVE)
    inputs["siblings"][1][2] = str(int(inputs["siblings"][1][2]) + 1)  # leaf 1's path reaches another root
    with pytest.raises(InputRejected, match="an assert failed"):
        calculate_witness(wasm, inputs, cf.CURVE)


@pytest.mark.parametrize("family, k", [("sha256", 1), ("chain", 5)])
def test_witnesses_give_the_public_signals_computed_without_the_circuit(toolchain, tmp_path, family, k):
    """sha256: hashlib's digest; chain: y and x. Both generators' witnesses are equal."""
    run = cf.CircuitRun(cf.FAMILIES[family], k, 20, tmp_path, cf.Options(witness_repeats=1))
    compiled = run.compile()
    assert compiled["log2"] == {"sha256": 15, "chain": 3}[family]
    run.inputs()
    rec = run.witness()
    assert rec["witness_equal"] and rec["witness_public_matches_expected"]
