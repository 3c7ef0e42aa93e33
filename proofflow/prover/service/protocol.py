"""The service's wire format: one JSON object a line, both ways, over a Unix stream socket.

Requests: ``{"op": "prove", "job": {...}}``, ``{"op": "stage", "job": {...}}`` (map and pin a
segment ahead of its proof), ``{"op": "status"}``, ``{"op": "stop"}``.
Replies: ``{"ok": true, ...}`` or ``{"ok": false, "error": MESSAGE, "error_type": NAME}``.
A job names a shared staging segment, never carries data: the caller and the service share the
host (the segment is in its shared memory).
"""
from __future__ import annotations

import json

MAX_LINE = 1 << 20  # no message is near this; a longer line means a confused peer


class ProtocolError(RuntimeError):
    pass


def send(f, obj: dict) -> None:
    f.write(json.dumps(obj, separators=(",", ":")).encode() + b"\n")
    f.flush()


def recv(f) -> dict:
    line = f.readline(MAX_LINE + 1)
    if not line:
        raise ProtocolError("the peer closed the connection")
    if len(line) > MAX_LINE or not line.endswith(b"\n"):
        raise ProtocolError("message too long or cut off")
    try:
        obj = json.loads(line)
    except ValueError as exc:
        raise ProtocolError(f"not JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise ProtocolError("a message must be a JSON object")
    return obj
