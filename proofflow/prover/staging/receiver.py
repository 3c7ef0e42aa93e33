"""Cross-host staging: a partition synthesized on another host (a Celery CPU worker) streams
its a/b/c and witness over TCP straight into a segment of the GPU host's shared staging,
where the prover service maps and pins it like a local one. No file on either side: the
sender streams from the buffer synthesis wrote, the receiver reads the socket into the
segment's mapping.

Protocol (one connection a partition): the sender writes a JSON header line
``{"op": "put", "token", "holder", "n", "num_variables", "timeout"}``; the receiver leases a
segment (waiting up to ``timeout`` for room under the budget) and answers
``{"ok": true, "segment": ID}`` or an error; the sender then writes exactly the segment's
bytes (a/b/c as one (3, n, 4) block, then the witness), and the receiver answers once they
are in (``"ready": true``). A sender that stops short leaves nothing: the lease is released.
``token`` (PROOFFLOW_STAGING_TOKEN) must match the receiver's: it may listen beyond
loopback only with one.
"""
from __future__ import annotations

import argparse
import hmac
import json
import logging
import socket
import socketserver
import sys
import time

import numpy as np

from proofflow.prover.staging.shared import SegmentError, SharedStaging, segment_bytes
from proofflow.prover.errors import ErrorType, StagingTimeout, error_reply

log = logging.getLogger("proofflow.staging")
MAX_HEADER = 4096
_CHUNK = 8 << 20


class StreamError(RuntimeError):
    """The receiver refused a partition or the stream broke (``error_type`` says why)."""

    def __init__(self, message: str, error_type: ErrorType = ErrorType.INTERNAL):
        super().__init__(message)
        self.error_type = ErrorType(error_type)


def parse_endpoint(endpoint: str) -> tuple[str, int]:
    host, sep, port = endpoint.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"a staging endpoint is HOST:PORT, got {endpoint!r}")
    return host.strip("[]"), int(port)


def _send_line(f, obj: dict) -> None:
    f.write(json.dumps(obj).encode() + b"\n")
    f.flush()


def _read_line(f) -> dict:
    line = f.readline(MAX_HEADER + 1)
    if not line.endswith(b"\n"):
        raise ValueError("header missing, too long or cut off")
    obj = json.loads(line)
    if not isinstance(obj, dict):
        raise ValueError("a header must be a JSON object")
    return obj


# -- the receiver (on the GPU host) ----------------------------------------------------------
class _Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        server: Receiver = self.server  # type: ignore[assignment]
        try:
            head = _read_line(self.rfile)
            lease = server.accept(head)
        except (ValueError, SegmentError, StagingTimeout) as exc:
            _send_line(self.wfile, error_reply(exc))
            return
        _send_line(self.wfile, {"ok": True, "segment": lease.id})
        t0 = time.time()
        seg = server.staging.open(lease, writer=True)
        try:
            view = memoryview(seg.mapping.words).cast("B")[:lease.nbytes]
            got = 0
            while got < lease.nbytes:
                n = self.rfile.readinto(view[got:got + _CHUNK])
                if not n:
                    break
                got += n
            del view
        finally:
            seg.close()
        if got != lease.nbytes:
            server.staging.release(lease.id)
            log.warning("partition of %s cut off at %d of %d bytes: its segment released", lease.owner, got,
                        lease.nbytes)
            return
        server.staging.ready(lease)
        server.received += 1
        _send_line(self.wfile, {"ok": True, "segment": lease.id, "ready": True, "bytes": got,
                                "seconds": time.time() - t0})


class Receiver(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, listen: tuple[str, int], staging: SharedStaging, token: str | None):
        if not token and listen[0] not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError("a staging receiver listening beyond loopback needs PROOFFLOW_STAGING_TOKEN")
        self.staging, self.token, self.received = staging, token or "", 0
        super().__init__(listen, _Handler)

    def accept(self, head: dict):
        """The lease for a valid header (waits for room up to its timeout)."""
        if head.get("op") != "put":
            raise ValueError(f"unknown op {head.get('op')!r}")
        if not hmac.compare_digest(str(head.get("token", "")), self.token):
            raise ValueError("wrong staging token")
        for name in ("n", "num_variables"):
            if not isinstance(head.get(name), int) or isinstance(head.get(name), bool) or head[name] <= 0:
                raise ValueError(f"{name} must be a positive integer, got {head.get(name)!r}")
        if not isinstance(head.get("holder"), str) or not head["holder"]:
            raise ValueError("holder must be a non-empty string")
        timeout = head.get("timeout", 0)
        if not isinstance(timeout, (int, float)) or timeout < 0:
            raise ValueError(f"timeout must be a non-negative number, got {timeout!r}")
        return self.staging.lease(head["holder"], head["n"], head["num_variables"], timeout)


# -- the sender (on the synthesizing host) ----------------------------------------------------
def send(endpoint: str, token: str | None, holder: str, abc: np.ndarray, witness: np.ndarray,
         timeout: float) -> dict:
    """Stream a partition's a/b/c ((3, n, 4) block) and witness into the receiver's staging;
    returns its reply (the segment's id, bytes, seconds). ``timeout`` bounds the wait for
    room there; the stream itself has the socket's."""
    n, nv = abc.shape[1], witness.shape[0]
    host, port = parse_endpoint(endpoint)
    try:
        s = socket.create_connection((host, port), timeout=30)
    except OSError as exc:
        raise StreamError(f"no staging receiver at {endpoint}: {exc}", ErrorType.UNAVAILABLE) from None
    with s:
        s.settimeout(timeout + 30)
        f = s.makefile("rwb")
        try:
            _send_line(f, {"op": "put", "token": token or "", "holder": holder, "n": n, "num_variables": nv,
                           "timeout": timeout})
            reply = _read_line(f)
            if not reply.get("ok"):
                raise StreamError(f"the staging receiver at {endpoint} refused the partition: {reply.get('error')}",
                                  ErrorType.named(reply.get("error_type")))
            s.settimeout(300)
            for block in (abc, witness):
                f.write(memoryview(np.ascontiguousarray(block)).cast("B"))
            f.flush()
            done = _read_line(f)
        except (OSError, ValueError) as exc:
            raise StreamError(f"streaming to {endpoint} failed: {exc}") from None
        finally:
            f.close()
    if not done.get("ready") or done.get("bytes") != segment_bytes(n, nv):
        raise StreamError(f"the staging receiver at {endpoint} did not take the partition: {done}")
    return done


def main(argv=None) -> int:
    from proofflow import settings
    p = argparse.ArgumentParser(prog="proofflow-staging-receiver",
                                description="Receive partitions synthesized on other hosts into this host's shared "
                                            "staging (run on each GPU host of a multi-host deployment).")
    config = settings.current()
    p.add_argument("--listen", default=config.staging_listen,
                   help="HOST:PORT to listen on (default %(default)s, PROOFFLOW_STAGING_LISTEN)")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    staging = SharedStaging.from_settings(config)
    try:
        server = Receiver(parse_endpoint(args.listen), staging, config.staging_token)
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    log.info("staging receiver on %s:%d into %s", *server.server_address[:2], staging.root)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
