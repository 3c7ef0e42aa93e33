"""`proofflow groth16 prove` on the GPU goes through the device's warm prover service by
default: the first call starts it and it loads the zkey's cache entry, the next finds it
with the key resident; each proof verifies (CPU pairing check, snarkjs's files) and its
public.json is the in-process CPU path's."""
from __future__ import annotations

import pytest

from proofflow.prover.device import available as gpu_available

pytest.importorskip("cupy")
if not gpu_available():
    pytest.skip("no GPU visible", allow_module_level=True)

pytestmark = pytest.mark.gpu


def test_drop_in_proofs_through_the_gpus_warm_service(tmp_path, monkeypatch):
    from bench.snarkjs import write_chain_r1cs, write_chain_wtns
    from proofflow.prover.backend.cpu import CpuBackend
    from proofflow.prover.circom import dropin, read_r1cs, read_zkey, setup, verify_files
    from proofflow.prover.circom.snarkjs_json import write_verification_key
    from proofflow.prover.service.client import ServiceClient
    from proofflow.prover.staging.shared import SharedStaging
    monkeypatch.setenv("PROOFFLOW_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("PROOFFLOW_GROTH16_SERVICE", raising=False)
    write_chain_r1cs(tmp_path / "chain.r1cs", 10)
    write_chain_wtns(tmp_path / "chain.wtns", 10, x=3, c=11)
    zkey = tmp_path / "chain.zkey"
    setup.write_test_zkey(read_r1cs(tmp_path / "chain.r1cs"), 7, zkey, CpuBackend())
    write_verification_key(tmp_path / "vk.json", read_zkey(zkey).vk)
    witness = dropin.wtns_witness(tmp_path / "chain.wtns")

    cpu = dropin.prove_files(zkey, witness, tmp_path / "cpu.json", tmp_path / "cpu_public.json", "cpu")
    assert cpu.service is None and verify_files(tmp_path / "vk.json", tmp_path / "cpu_public.json", tmp_path / "cpu.json")
    client = ServiceClient("gpu", 0)
    try:
        runs = [dropin.prove_files(zkey, witness, tmp_path / f"p{i}.json", tmp_path / f"q{i}.json", backend)
                for i, backend in enumerate(("gpu", "auto"))]
        status = client.status()
    finally:
        client.stop()
    first, second = (run.service for run in runs)
    assert first.device == second.device == "cuda:0" and first.pid == second.pid == status["pid"]
    assert first.started_s is not None and first.key_loaded
    assert second.started_s is None and not second.key_loaded
    assert [k["directory"] for k in status["resident_keys"]] == [str(runs[0].cache_dir / "key")]
    for i in range(2):
        assert verify_files(tmp_path / "vk.json", tmp_path / f"q{i}.json", tmp_path / f"p{i}.json")
        assert (tmp_path / f"q{i}.json").read_bytes() == (tmp_path / "cpu_public.json").read_bytes()
    assert SharedStaging.from_settings().leases() == []
