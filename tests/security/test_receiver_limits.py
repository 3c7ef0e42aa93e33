"""Finding 3: "The staging receiver can be stalled before any token is checked." No socket
timeout and no connection cap (1,100 idle connections made 1,105 threads, and under
``ulimit -n 256`` a real sender timed out); a sender with the token that stalls after its
header kept its lease for the whole TTL; a non-ASCII token or a header of 1,500 nested ``[``
killed the handler with no reply; a timeout of NaN or Infinity was accepted; ENOSPC left a
``.json.tmp`` that nothing reclaimed; re-leasing as the same owner handed a still-running
old writer's segment to the new lease. Here each is tried against a real receiver on
loopback (the flood against the CLI's, under ``ulimit -n 256``)."""
from __future__ import annotations

import dataclasses
import datetime
import errno
import ipaddress
import json
import os
import pathlib
import re
import resource
import socket
import ssl
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from proofflow.prover import pipeline
from proofflow.prover.circuits.by_name import get_circuit
from proofflow.prover.errors import ErrorType
from proofflow.prover.staging import receiver
from proofflow.prover.staging.receiver import Receiver, StreamError, send
from proofflow.prover.staging.shared import SharedStaging

TOKEN = "s3cret"
N, NV = 256, 300  # a segment of 33,792 bytes


def _partition(fill: int) -> tuple[np.ndarray, np.ndarray]:
    return np.full((3, N, 4), fill, np.uint64), np.full((NV, 4), fill, np.uint64)


def _limits(**kwargs):
    return dataclasses.replace(receiver.ReceiverLimits(), **kwargs)


@pytest.fixture
def staging(tmp_path):
    return SharedStaging(tmp_path / "gpu-host-shm", 64 << 20)


@pytest.fixture
def serve(staging):
    """Starts a receiver on loopback (``Receiver``'s keyword arguments); returns its endpoint."""
    servers = []

    def start(**kwargs) -> tuple[Receiver, str]:
        server = Receiver(("127.0.0.1", 0), staging, TOKEN, **kwargs)
        threading.Thread(target=server.serve_forever, name="staging-receiver", daemon=True).start()
        servers.append(server)
        return server, f"127.0.0.1:{server.server_address[1]}"
    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _connect(endpoint: str) -> socket.socket:
    host, _, port = endpoint.rpartition(":")
    return socket.create_connection((host, int(port)), timeout=10)


def _header(holder="d/r/p0000", token=TOKEN, timeout=1, **fields) -> bytes:
    head = {"op": "put", "token": token, "holder": holder, "n": N, "num_variables": NV, "timeout": timeout}
    return json.dumps({**head, **fields}).encode() + b"\n"


def _reply(sock: socket.socket, timeout: float = 10) -> dict | None:
    """The receiver's next reply line, or None if it closed the connection without one."""
    sock.settimeout(timeout)
    line = b""
    while not line.endswith(b"\n"):
        chunk = sock.recv(1)
        if not chunk:
            return None
        line += chunk
    return json.loads(line)


def _ask(endpoint: str, header: bytes) -> dict | None:
    with _connect(endpoint) as s:
        s.sendall(header)
        return _reply(s)


def _files(staging: SharedStaging) -> list[str]:
    """Everything in the staging root but its lock and (empty) idle directory."""
    out = [str(p.relative_to(staging.root)) for p in staging.root.rglob("*")]
    return sorted(set(out) - {".lock", "idle"})


def test_a_connection_silent_before_its_header_is_closed_within_the_header_timeout(serve):
    _, endpoint = serve(limits=_limits(header_timeout_s=0.5))
    with _connect(endpoint) as silent, _connect(endpoint) as trickling:
        t0 = time.monotonic()
        reply = _reply(silent)
        assert time.monotonic() - t0 < 3 and reply["ok"] is False and "no header within 0.5 s" in reply["error"]
        # a byte every 0.1 s does not extend it: the timeout covers the whole header
        trickling.settimeout(0.1)
        got, t0 = b"", time.monotonic()
        while not got and time.monotonic() - t0 < 10:
            try:
                trickling.sendall(b" ")
                got = trickling.recv(4096)
            except TimeoutError:
                continue
            except OSError:
                break
        assert time.monotonic() - t0 < 3 and b"no header within" in got


def test_a_sender_silent_after_its_header_loses_its_lease_within_the_idle_timeout(serve, staging):
    _, endpoint = serve(limits=_limits(idle_timeout_s=0.5))
    with _connect(endpoint) as s:
        s.sendall(_header())
        assert _reply(s)["ok"] and len(staging.leases()) == 1
        s.sendall(b"\0" * 1000)  # then nothing more (lease TTL: a day)
        t0 = time.monotonic()
        reply = _reply(s)
        assert reply["ok"] is False and "silent for 0.5 s" in reply["error"]
        assert time.monotonic() - t0 < 3
    assert staging.leases() == [] and staging.stats()["leased"] == 0


def test_excess_connections_are_refused_and_threads_stay_bounded(serve, staging):
    server, endpoint = serve(limits=_limits(max_pending=4, max_streams=1, header_timeout_s=30))
    first = [_connect(endpoint) for _ in range(4)]
    later = [_connect(endpoint) for _ in range(4)]
    for s in first:  # each newer connection closed the oldest waiting one, with a reply
        reply = _reply(s, timeout=5)
        assert reply["ok"] is False and reply["error_type"] == "Unavailable"
        assert "more than 4 connections waiting" in reply["error"]
    for s in later:  # the newest still wait for their header
        s.settimeout(0.2)
        with pytest.raises(TimeoutError):
            s.recv(1)
    # a sender with the token that holds the one stream slot: the next one is refused, not queued
    holder = _connect(endpoint)
    holder.sendall(_header("d/r/p0001"))
    assert _reply(holder)["ok"]
    t0 = time.monotonic()
    with pytest.raises(StreamError, match="busy: 1 streams at once") as refused:
        send(endpoint, TOKEN, "d/r/p0002", *_partition(5), timeout=1)
    assert refused.value.error_type is ErrorType.UNAVAILABLE and time.monotonic() - t0 < 3
    threads = [t for t in threading.enumerate() if t.name == "staging-connection"]
    assert len(threads) <= 4 + 1 + 1  # waiting, streaming, the refused one finishing
    holder.close()  # its stream cut off: the slot and its lease are free again
    for _ in range(100):
        if not staging.leases():
            break
        time.sleep(0.02)
    assert send(endpoint, TOKEN, "d/r/p0002", *_partition(5), timeout=1)["ready"] and server.received == 1
    for s in first + later:
        s.close()


def test_a_deeply_nested_header_and_a_non_ascii_token_get_error_replies(serve, staging):
    server, endpoint = serve()
    for header, why in ((b"[" * 1500 + b"\n", "nests too deeply"),
                        (b'{"op": "put", "token": ' + b"[" * 1500 + b"\n", "nests too deeply"),
                        (b"{" + b" " * 5000 + b"}\n", "at most 4096 bytes"),
                        (_header(token="pässwörd"), "wrong staging token"),
                        (_header(token="\ud800"), "wrong staging token"),
                        (_header(token=["s3cret"]), "numbers and strings")):
        reply = _ask(endpoint, header)
        assert reply is not None, f"no reply to a header of {len(header)} bytes"
        assert reply["ok"] is False and why in reply["error"], reply
        assert TOKEN not in reply["error"]
    with pytest.raises(StreamError, match="wrong staging token"):
        send(endpoint, "tökën", "d/r/p0000", *_partition(1), timeout=1)
    assert staging.leases() == []
    assert send(endpoint, TOKEN, "d/r/p0000", *_partition(1), timeout=1)["ready"] and server.received == 1


def test_nan_and_infinite_timeouts_are_refused(serve, staging, monkeypatch):
    _, endpoint = serve()
    for raw in (b"NaN", b"Infinity", b"-Infinity", b"1e400", b"-1"):
        reply = _ask(endpoint, _header(timeout=0).replace(b'"timeout": 0', b'"timeout": ' + raw))
        assert reply is not None and reply["ok"] is False and "finite" in reply["error"], (raw, reply)
    assert staging.leases() == []
    # a finite but huge wait is capped: a full budget answers within the receiver's max_wait_s
    _, endpoint = serve(limits=_limits(max_wait_s=0.3))
    staging.lease("d/other/p0000", (64 << 20) // 96 - 1, 1, timeout=0)  # the whole budget
    t0 = time.monotonic()
    reply = _ask(endpoint, _header(timeout=1e9))
    assert reply["error_type"] == "StagingTimeout" and time.monotonic() - t0 < 5
    # and the receiver's own timeouts are finite, from the settings on
    for value in ("nan", "inf", "0"):
        monkeypatch.setenv("PROOFFLOW_STAGING_IDLE_TIMEOUT", value)
        with pytest.raises(ValueError, match="PROOFFLOW_STAGING_IDLE_TIMEOUT must be a positive, finite"):
            receiver.main(["--listen", "127.0.0.1:0"])
    with pytest.raises(ValueError, match="header_timeout_s must be a positive, finite"):
        _limits(header_timeout_s=float("nan"))


def test_a_full_staging_gets_a_reply_and_leaves_no_files(serve, staging, monkeypatch):
    _, endpoint = serve()

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def full_after_creating(path, *args, **kwargs):  # a lease file's write that runs out of room
        pathlib.Path(path).touch()
        full()

    with monkeypatch.context() as m:  # no room for the segment
        m.setattr(os, "posix_fallocate", full)
        with pytest.raises(StreamError, match="is full") as refused:
            send(endpoint, TOKEN, "d/r/p0000", *_partition(1), timeout=1)
    assert refused.value.error_type is ErrorType.OUT_OF_MEMORY and _files(staging) == []
    with monkeypatch.context() as m:  # room for the segment, none for its lease file
        m.setattr(pathlib.Path, "write_text", full_after_creating)
        m.setattr(pathlib.Path, "write_bytes", full_after_creating)
        with pytest.raises(StreamError, match="is full"):
            send(endpoint, TOKEN, "d/r/p0000", *_partition(1), timeout=1)
    assert _files(staging) == [] and staging.leases() == []
    # a lease file's temporary left by a writer killed mid-write goes at the next reclaim
    (staging.root / ".0123456789abcdef.json.tmp").write_text("{")
    staging.reclaim()
    assert _files(staging) == []
    assert send(endpoint, TOKEN, "d/r/p0000", *_partition(1), timeout=1)["ready"]


def test_a_same_owner_re_lease_never_gets_the_segment_a_live_writer_holds(serve, staging):
    server, endpoint = serve()
    old_abc, old_witness = _partition(0xAA)
    with _connect(endpoint) as old:  # an old writer of d/r/p0000, half way through its stream
        old.sendall(_header("d/r/p0000"))
        leased = _reply(old)
        assert leased["ok"]
        old_bytes = old_abc.tobytes() + old_witness.tobytes()
        old.sendall(old_bytes[:len(old_bytes) // 2])
        # the receiver writing them into its segment: the re-run below comes mid-stream (on a
        # loaded host the receiver's thread could otherwise reach the segment only after it)
        seg = staging.open(leased["segment"], writer=True)
        for _ in range(500):
            if seg.abc[0].flat[0] == 0xAA:
                break
            time.sleep(0.01)
        seg.close()
        new = send(endpoint, TOKEN, "d/r/p0000", *_partition(0xBB), timeout=1)  # its re-run
        old.sendall(old_bytes[len(old_bytes) // 2:])  # the old writer goes on
        reply = _reply(old)
    assert reply["ok"] is False and "released or replaced" in reply["error"]
    assert [lease.id for lease in staging.leases()] == [new["segment"]] and server.received == 1
    seg = staging.open(new["segment"], owner="d/r/p0000")
    assert all((v == 0xBB).all() for v in seg.abc) and (seg.witness == 0xBB).all(), "the old writer wrote into it"
    seg.close()


def _self_signed(tmp_path) -> tuple[pathlib.Path, pathlib.Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(x509.NameOID.COMMON_NAME, "staging receiver")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                                        x509.DNSName("localhost")]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = tmp_path / "receiver.pem", tmp_path / "receiver.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


def test_tls_round_trip_and_a_plaintext_client_is_refused(serve, staging, tmp_path, monkeypatch):
    cert, key = _self_signed(tmp_path)
    server, endpoint = serve(tls=receiver.server_tls(cert, key), limits=_limits(header_timeout_s=2))
    reply = send(endpoint, TOKEN, "d/r/p0000", *_partition(3), timeout=1, tls=receiver.client_tls(cert))
    seg = staging.open(reply["segment"], owner="d/r/p0000")
    assert (seg.abc[2] == 3).all() and (seg.witness == 3).all()
    seg.close()
    with pytest.raises(StreamError):  # plaintext: the token never reaches the header parser
        send(endpoint, TOKEN, "d/r/p0001", *_partition(3), timeout=1)
    with pytest.raises(StreamError, match="no TLS with the staging receiver"):  # a receiver it cannot verify
        send(endpoint, TOKEN, "d/r/p0001", *_partition(3), timeout=1, tls=ssl.create_default_context())
    assert [lease.owner for lease in staging.leases()] == ["d/r/p0000"] and server.received == 1
    # a synthesis on another host streams over TLS once PROOFFLOW_STAGING_TLS_CA names the CA
    monkeypatch.setenv("PROOFFLOW_SHARED_STAGING", str(tmp_path / "cpu-host-shm"))
    monkeypatch.setenv("PROOFFLOW_STAGING_TLS_CA", str(cert))
    out = pipeline.synthesize_remote(get_circuit("mimc", 8), 4, 2, endpoint, TOKEN, "d/r/p0002")
    assert out["stream_bytes"] > 0 and server.received == 2
    # a certificate without its key is a configuration error, not a plaintext receiver
    monkeypatch.setenv("PROOFFLOW_STAGING_TLS_CERT", str(cert))
    assert receiver.main(["--listen", "127.0.0.1:0"]) == 2


def test_a_flood_of_idle_connections_does_not_keep_a_sender_out(tmp_path):
    """1,000 idle connections against the receiver (the CLI's, under ``ulimit -n 256``)
    while a real sender is served within 5 s, on a bounded number of threads."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 1300:
        if hard != resource.RLIM_INFINITY and hard < 1300:
            pytest.skip(f"1,000 connections need more file descriptors than the hard limit ({hard})")
        resource.setrlimit(resource.RLIMIT_NOFILE, (1300, hard))
    root = tmp_path / "gpu-host-shm"
    env = {**os.environ, "PROOFFLOW_SHARED_STAGING": str(root), "PROOFFLOW_STAGING_TOKEN": TOKEN}
    proc = subprocess.Popen([sys.executable, "-m", "proofflow.prover.staging.receiver", "--listen", "127.0.0.1:0"],
                            env=env, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256)))
    flood = []
    try:
        line = proc.stderr.readline()
        port = re.search(r"staging receiver on 127\.0\.0\.1:(\d+)", line)
        assert port, line
        endpoint = f"127.0.0.1:{port[1]}"
        for _ in range(1000):
            flood.append(_connect(endpoint))
        t0 = time.monotonic()
        reply = send(endpoint, TOKEN, "d/r/p0000", *_partition(9), timeout=1)
        assert reply["ready"] and time.monotonic() - t0 < 5
        threads = int(re.search(r"Threads:\s+(\d+)", pathlib.Path(f"/proc/{proc.pid}/status").read_text())[1])
        limits = receiver.ReceiverLimits()
        assert threads <= limits.max_pending + limits.max_streams + 4, f"{threads} threads for 1,000 connections"
    finally:
        for s in flood:
            s.close()
        proc.terminate()
        proc.wait(10)
    staging = SharedStaging(root, 64 << 20)
    assert [(lease.owner, lease.state) for lease in staging.leases()] == [("d/r/p0000", "ready")]
