"""bench.key_upload times uploads to the device: without one it says so and exits 2 (its runs
are bench/device.sh's key-upload plan and 2p27's upload mode)."""
from bench import key_upload


def test_without_a_gpu_it_refuses(tmp_path, monkeypatch, capsys):
    from proofflow.prover import device
    monkeypatch.setattr(device, "available", lambda: False)
    assert key_upload.main(["--key", str(tmp_path), "--out", str(tmp_path / "out.json")]) == 2
    assert "no GPU visible" in capsys.readouterr().err and not (tmp_path / "out.json").exists()
