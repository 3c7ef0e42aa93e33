"""Cross-host staging: a partition synthesized on one host streams into another host's
shared staging (here: two staging directories and a receiver on loopback), bit for bit; bad
tokens, headers and cut-off streams leave nothing leased."""
from __future__ import annotations

import json
import socket
import threading
import time

import numpy as np
import pytest

from proofflow import settings
from proofflow.prover import pipeline
from proofflow.prover.circuits.by_name import get_circuit
from proofflow.prover.staging.shared import SharedStaging
from proofflow.prover.staging.receiver import Receiver, ReceiverLimits, StreamError, parse_endpoint, send

TOKEN = "s3cret"


@pytest.fixture
def gpu_host(tmp_path):
    staging = SharedStaging(tmp_path / "gpu-host-shm", 64 << 20)
    server = Receiver(parse_endpoint("127.0.0.1:0"), staging, TOKEN)
    threading.Thread(target=server.serve_forever, name="staging-receiver", daemon=True).start()
    yield staging, f"127.0.0.1:{server.server_address[1]}", server
    server.shutdown()
    server.server_close()


def test_a_partition_streams_into_the_other_hosts_staging(gpu_host, tmp_path, monkeypatch):
    staging, endpoint, server = gpu_host
    monkeypatch.setenv("PROOFFLOW_SHARED_STAGING", str(tmp_path / "cpu-host-shm"))
    circuit = get_circuit("mimc", 9)
    out = pipeline.synthesize_remote(circuit, 4, 2, endpoint, TOKEN, "d/r/p0002")
    assert out["stream_bytes"] == (3 * circuit.domain_size + out["num_variables"]) * 32 and out["stream_s"] > 0
    seg = staging.open(out["segment"], owner="d/r/p0002")
    inst = circuit.instance(4, 2)
    for got, want in zip(seg.abc, circuit.witness_map(inst.witness)):
        assert np.array_equal(got, want)
    assert np.array_equal(seg.witness, inst.witness)
    assert out["public_inputs"] == [hex(x) for x in inst.public_inputs]
    seg.close()
    assert server.received == 1
    assert not (tmp_path / "cpu-host-shm").exists(), "the synthesizing host's staging was not used"


def test_refusals_leave_nothing_leased(gpu_host):
    staging, endpoint, _ = gpu_host
    abc, witness = np.zeros((3, 256, 4), np.uint64), np.zeros((300, 4), np.uint64)
    with pytest.raises(StreamError, match="wrong staging token"):
        send(endpoint, "guess", "d/r/p0000", abc, witness, timeout=1)
    with pytest.raises(StreamError, match="can never fit"):
        send(endpoint, TOKEN, "d/r/p0000", np.zeros((3, 1 << 20, 4), np.uint64), witness, timeout=1)
    with pytest.raises(StreamError, match="no staging receiver"):
        send("127.0.0.1:1", TOKEN, "d/r/p0000", abc, witness, timeout=1)
    host, port = parse_endpoint(endpoint)
    for head, msg in ((b"not json\n", "Expecting value"), (b'{"op": "put", "token": "s3cret", "n": -1}\n', "n must"),
                      (b'{"op": "get"}\n', "unknown op")):
        with socket.create_connection((host, port), timeout=5) as s:
            s.sendall(head)
            reply = json.loads(s.makefile("rb").readline())
            assert reply["ok"] is False and msg in reply["error"], reply
    assert staging.leases() == []


def test_a_stream_cut_off_releases_its_segment(gpu_host):
    staging, endpoint, server = gpu_host
    host, port = parse_endpoint(endpoint)
    with socket.create_connection((host, port), timeout=5) as s:
        f = s.makefile("rwb")
        f.write(json.dumps({"op": "put", "token": TOKEN, "holder": "d/r/p0000", "n": 256, "num_variables": 300,
                            "timeout": 1}).encode() + b"\n")
        f.flush()
        assert json.loads(f.readline())["ok"]
        f.write(b"\0" * 1000)  # of 33,792 bytes: the sender dies
        f.close()
    for _ in range(100):
        if not staging.leases():
            break
        time.sleep(0.02)
    assert staging.leases() == [] and server.received == 0


def test_a_receiver_beyond_loopback_needs_a_token(tmp_path):
    with pytest.raises(ValueError, match="needs PROOFFLOW_STAGING_TOKEN"):
        Receiver(("0.0.0.0", 0), SharedStaging(tmp_path, 1 << 20), None)
    with pytest.raises(ValueError, match="HOST:PORT"):
        parse_endpoint("gpu-host")


def test_the_limits_default_to_the_settings_defaults():
    assert ReceiverLimits.from_settings(settings.load({})) == ReceiverLimits()
