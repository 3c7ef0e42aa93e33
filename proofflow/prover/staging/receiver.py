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

The port may face anyone, so nothing a peer does holds the receiver (``ReceiverLimits``): a
connection has a few seconds to send its header, a bounded number wait for theirs (one more
closes the oldest, so a flood of idle connections cannot crowd out a sender), a bounded
number stream, and a stream that goes silent loses its lease. Every refusal is answered with
an error line. With a certificate and key (PROOFFLOW_STAGING_TLS_CERT/KEY) it speaks TLS
only, and senders with PROOFFLOW_STAGING_TLS_CA verify it.
"""
from __future__ import annotations

import argparse
import hmac
import json
import logging
import math
import socket
import socketserver
import ssl
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from proofflow import settings
from proofflow.prover.staging.shared import Lease, SharedStaging, segment_bytes
from proofflow.prover.errors import ErrorType, error_reply

log = logging.getLogger("proofflow.staging")
MAX_HEADER = 4096
_CHUNK = 8 << 20
_LOOPBACK = ("127.0.0.1", "localhost", "::1")


class StreamError(RuntimeError):
    """The receiver refused a partition or the stream broke (``error_type`` says why)."""

    def __init__(self, message: str, error_type: ErrorType = ErrorType.INTERNAL):
        super().__init__(message)
        self.error_type = ErrorType(error_type)


@dataclass(frozen=True)
class ReceiverLimits:
    """What one peer may hold (defaults: the settings' PROOFFLOW_STAGING_* defaults).
    ``header_timeout_s``: from connecting to a complete header, TLS handshake included.
    ``idle_timeout_s``: the longest silence mid-stream; ``stream_timeout_s``: a whole stream;
    past either the lease is cancelled. ``max_wait_s``: the longest a sender may wait for
    room. ``max_pending``: connections waiting for their header (one more closes the oldest);
    ``max_streams``: senders past the token check at once (more are refused)."""
    header_timeout_s: float = 10.0
    idle_timeout_s: float = 60.0
    stream_timeout_s: float = 3600.0
    max_wait_s: float = 600.0
    max_pending: int = 64
    max_streams: int = 64

    def __post_init__(self):
        for name in ("header_timeout_s", "idle_timeout_s", "stream_timeout_s"):
            if not 0 < getattr(self, name) < math.inf:
                raise ValueError(f"{name} must be a positive, finite number of seconds")
        if not 0 <= self.max_wait_s < math.inf:
            raise ValueError("max_wait_s (PROOFFLOW_STAGING_TIMEOUT) must be a finite number of seconds")
        if self.max_pending < 1 or self.max_streams < 1:
            raise ValueError("max_pending and max_streams must be at least 1")

    @classmethod
    def from_settings(cls, s: settings.Settings) -> "ReceiverLimits":
        return cls(s.staging_header_timeout_s, s.staging_idle_timeout_s, s.staging_stream_timeout_s,
                   s.staging_timeout_s, s.staging_max_pending, s.staging_max_streams)


def server_tls(cert: Path, key: Path) -> ssl.SSLContext:
    """The receiver's TLS (1.2 or later) with its certificate chain and key (PEM files)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(cert, key)
    return ctx


def client_tls(ca: Path) -> ssl.SSLContext:
    """A sender's TLS: the receiver's certificate must verify against ``ca`` for its host name."""
    ctx = ssl.create_default_context(cafile=str(ca))
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    return ctx


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


def _no_constant(name: str):
    raise ValueError("a header's numbers must be finite")


def _parse_header(line: bytes) -> dict:
    """A header line's fields: a flat JSON object of finite numbers and strings (no NaN or
    Infinity; nesting is refused, never recursed into without bound)."""
    try:
        head = json.loads(line, parse_constant=_no_constant)
    except RecursionError:
        raise ValueError("a header nests too deeply") from None
    if not isinstance(head, dict):
        raise ValueError("a header must be a JSON object")
    if any(isinstance(v, (dict, list)) for v in head.values()):
        raise ValueError("a header's fields are numbers and strings")
    return head


def _unavailable(message: str) -> dict:
    """The reply to a connection turned away for now (a retry may succeed)."""
    return {"ok": False, "error": message, "error_type": ErrorType.UNAVAILABLE.value}


# -- the receiver (on the GPU host) ----------------------------------------------------------
class _Connection:
    """An accepted socket (TLS-wrapped once its thread starts); ``evicted``: closed for a
    newer one while it waited for its header; ``talking``: replies can reach the peer (with
    TLS, once the handshake is done)."""

    def __init__(self, sock: socket.socket, talking: bool):
        self.sock, self.evicted, self.talking = sock, False, talking

    def evict(self) -> None:
        self.evicted = True
        try:  # the socket's own shutdown, not SSLSocket's: its thread is still reading
            socket.socket.shutdown(self.sock, socket.SHUT_RD)
        except OSError:
            pass

    def reply(self, obj: dict, timeout: float) -> None:
        """Best effort: the peer may be gone or not reading."""
        if not self.talking:
            return
        try:
            self.sock.settimeout(timeout)
            self.sock.sendall(json.dumps(obj).encode() + b"\n")
        except OSError:
            pass


class Receiver(socketserver.TCPServer):
    """Serves each connection on a thread of its own, and bounds them (``ReceiverLimits``):
    at most ``max_pending`` waiting for a header plus ``max_streams`` streaming."""
    allow_reuse_address = True
    request_queue_size = 1024  # a burst of connections waits in the kernel, not in SYN retries

    def __init__(self, listen: tuple[str, int], staging: SharedStaging, token: str | None,
                 limits: ReceiverLimits = ReceiverLimits(), tls: ssl.SSLContext | None = None):
        if not token and listen[0] not in _LOOPBACK:
            raise ValueError("a staging receiver listening beyond loopback needs PROOFFLOW_STAGING_TOKEN")
        self.staging, self.token, self.limits, self.tls = staging, token or "", limits, tls
        self.received = 0
        self._lock = threading.Lock()
        self._waiting: dict[_Connection, bool] = {}  # oldest first
        self._streams = threading.BoundedSemaphore(limits.max_streams)
        super().__init__(listen, None)

    def process_request(self, request, client_address) -> None:
        conn = _Connection(request, talking=self.tls is None)
        with self._lock:
            while len(self._waiting) >= self.limits.max_pending:
                oldest = next(iter(self._waiting))
                del self._waiting[oldest]
                oldest.evict()
            self._waiting[conn] = True
        threading.Thread(target=self._serve, args=(conn,), name="staging-connection", daemon=True).start()

    def server_close(self) -> None:
        super().server_close()
        with self._lock:
            for conn in self._waiting:
                conn.evict()
            self._waiting.clear()

    def _serve(self, conn: _Connection) -> None:
        try:
            self._handle(conn)
        except Exception as exc:  # a bug, not the peer: still answered, and logged
            log.exception("staging connection failed")
            conn.reply(error_reply(exc), self.limits.header_timeout_s)
        finally:
            with self._lock:
                self._waiting.pop(conn, None)
            conn.sock.close()

    def _handle(self, conn: _Connection) -> None:
        limits = self.limits
        evicted = _unavailable(f"more than {limits.max_pending} connections waiting for their header: the "
                               "oldest closed (PROOFFLOW_STAGING_MAX_PENDING)")
        try:
            head, early = self._header(conn)
        except ssl.SSLError as exc:
            log.debug("staging connection closed: no TLS handshake (%s)", exc.reason)
            return
        except (OSError, ValueError) as exc:
            if conn.evicted:
                conn.reply(evicted, 1)
            elif isinstance(exc, TimeoutError):
                conn.reply(_unavailable(f"no header within {limits.header_timeout_s:g} s"), 1)
            elif isinstance(exc, ValueError):
                conn.reply(error_reply(exc), limits.header_timeout_s)
            return
        with self._lock:
            if not self._waiting.pop(conn, False):  # evicted as its header came in
                conn.reply(evicted, 1)
                return
        try:
            holder, n, num_variables, timeout = self._check(head)
        except ValueError as exc:
            conn.reply(error_reply(exc), limits.header_timeout_s)
            return
        if not self._streams.acquire(blocking=False):
            conn.reply(_unavailable(f"the staging receiver is busy: {limits.max_streams} streams at once "
                                    "(PROOFFLOW_STAGING_MAX_STREAMS)"), limits.header_timeout_s)
            return
        try:
            self._put(conn, holder, n, num_variables, timeout, early)
        finally:
            self._streams.release()

    def _header(self, conn: _Connection) -> tuple[dict, bytes]:
        """The header (after the TLS handshake) and any bytes that came after it, read
        within ``header_timeout_s`` in all, however slowly they trickle."""
        deadline = time.monotonic() + self.limits.header_timeout_s
        if self.tls is not None:
            with self._lock:  # an eviction meanwhile shuts down the socket it reads
                conn.sock = self.tls.wrap_socket(conn.sock, server_side=True, do_handshake_on_connect=False)
            conn.sock.settimeout(self.limits.header_timeout_s)
            conn.sock.do_handshake()
            conn.talking = True
        buf = b""
        while b"\n" not in buf:
            if len(buf) > MAX_HEADER:
                raise ValueError(f"a header is at most {MAX_HEADER} bytes")
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no header in time")
            conn.sock.settimeout(left)
            chunk = conn.sock.recv(MAX_HEADER + 1 - len(buf))
            if not chunk:
                raise ConnectionError("header missing or cut off")
            buf += chunk
        line, _, early = buf.partition(b"\n")
        return _parse_header(line), early

    def _check(self, head: dict) -> tuple[str, int, int, float]:
        """A valid put's holder, sizes and wait for room (at most ``max_wait_s``)."""
        if head.get("op") != "put":
            raise ValueError("unknown op")
        token = head.get("token", "")
        if not isinstance(token, str) or not hmac.compare_digest(token.encode("utf-8", "surrogatepass"),
                                                                 self.token.encode("utf-8", "surrogatepass")):
            raise ValueError("wrong staging token")
        for name in ("n", "num_variables"):
            value = head.get(name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"{name} must be a positive integer, got {type(value).__name__}")
        if not isinstance(head.get("holder"), str) or not head["holder"]:
            raise ValueError("holder must be a non-empty string")
        timeout = head.get("timeout", 0)
        if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or not 0 <= timeout < math.inf:
            raise ValueError("timeout must be a finite, non-negative number of seconds")
        return head["holder"], head["n"], head["num_variables"], min(timeout, self.limits.max_wait_s)

    def _put(self, conn: _Connection, holder: str, n: int, num_variables: int, timeout: float,
             early: bytes) -> None:
        try:
            lease = self.staging.lease(holder, n, num_variables, timeout)
        except (ValueError, MemoryError, OSError) as exc:  # can never fit, no room in time, /dev/shm full
            conn.reply(error_reply(exc), self.limits.idle_timeout_s)
            return
        t0 = time.time()
        try:
            conn.reply({"ok": True, "segment": lease.id}, self.limits.idle_timeout_s)
            self._stream(conn, lease, early)
            self.staging.ready(lease)
        except (OSError, ValueError) as exc:  # cut off, silent, too slow, or replaced meanwhile
            self.staging.release(lease.id)
            log.warning("partition of %s not received (%s): its segment released", lease.owner, exc)
            conn.reply(error_reply(exc), 1)
            return
        except BaseException:
            self.staging.release(lease.id)
            raise
        with self._lock:
            self.received += 1
        conn.reply({"ok": True, "segment": lease.id, "ready": True, "bytes": lease.nbytes,
                    "seconds": time.time() - t0}, self.limits.idle_timeout_s)

    def _stream(self, conn: _Connection, lease: Lease, early: bytes) -> None:
        """The lease's bytes from the socket into its segment, or TimeoutError (silent for
        ``idle_timeout_s``, or longer than ``stream_timeout_s`` in all) or ConnectionError."""
        limits, nbytes = self.limits, lease.nbytes
        deadline = time.monotonic() + limits.stream_timeout_s
        seg = self.staging.open(lease, writer=True)
        try:
            with memoryview(seg.mapping.words).cast("B") as raw:
                got = min(len(early), nbytes)
                raw[:got] = early[:got]
                while got < nbytes:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise TimeoutError(f"the stream took longer than {limits.stream_timeout_s:g} s")
                    conn.sock.settimeout(min(limits.idle_timeout_s, left))
                    try:
                        n = conn.sock.recv_into(raw[got:min(got + _CHUNK, nbytes)])
                    except TimeoutError:
                        if left <= limits.idle_timeout_s:
                            raise TimeoutError(f"the stream took longer than {limits.stream_timeout_s:g} s") from None
                        raise TimeoutError(f"the stream was silent for {limits.idle_timeout_s:g} s") from None
                    if not n:
                        raise ConnectionError(f"the stream was cut off at {got} of {nbytes} bytes")
                    got += n
        finally:
            seg.close()


# -- the sender (on the synthesizing host) ----------------------------------------------------
def send(endpoint: str, token: str | None, holder: str, abc: np.ndarray, witness: np.ndarray,
         timeout: float, tls: ssl.SSLContext | None = None) -> dict:
    """Stream a partition's a/b/c ((3, n, 4) block) and witness into the receiver's staging;
    returns its reply (the segment's id, bytes, seconds). ``timeout`` bounds the wait for
    room there; the stream itself has the socket's. ``tls``: speak TLS, verifying the
    receiver for the endpoint's host name."""
    n, nv = abc.shape[1], witness.shape[0]
    host, port = parse_endpoint(endpoint)
    try:
        s = socket.create_connection((host, port), timeout=30)
    except OSError as exc:
        raise StreamError(f"no staging receiver at {endpoint}: {exc}", ErrorType.UNAVAILABLE) from None
    if tls is not None:
        try:
            s = tls.wrap_socket(s, server_hostname=host)
        except OSError as exc:
            s.close()
            raise StreamError(f"no TLS with the staging receiver at {endpoint}: {exc}") from None
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
        limits = ReceiverLimits.from_settings(config)
        if (config.staging_tls_cert is None) != (config.staging_tls_key is None):
            raise ValueError("PROOFFLOW_STAGING_TLS_CERT and PROOFFLOW_STAGING_TLS_KEY are set together")
        tls = server_tls(config.staging_tls_cert, config.staging_tls_key) if config.staging_tls_cert else None
        server = Receiver(parse_endpoint(args.listen), staging, config.staging_token, limits, tls)
    except (ValueError, OSError) as exc:  # ssl.SSLError: an unreadable certificate or key
        print(f"error: {exc}", file=sys.stderr)
        return 2
    host, port = server.server_address[:2]
    log.info("staging receiver on %s:%d (%s) into %s", host, port, "TLS" if tls else "plain TCP", staging.root)
    if tls is None and host not in _LOOPBACK:
        log.warning("without PROOFFLOW_STAGING_TLS_CERT, the token and partitions cross the network in the clear")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
