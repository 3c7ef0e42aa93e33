"""JSON a user hands proofflow (input.json files, proof_batch's pending work, snarkjs's
public.json, proof.json and verification keys, a key's params.json), read within bounds:
at most ``PROOFFLOW_JSON_MAX_BYTES`` (checked on the open file before reading it; only plain
files), arrays and objects nested at most ``MAX_DEPTH`` deep (counted without recursion,
before parsing: Python's parser recurses and would raise RecursionError), integers of at
most ``MAX_DIGITS`` digits, and no NaN or Infinity. Anything else is a ``JsonRefused``
naming the bound, never quoting the content."""
from __future__ import annotations

import itertools
import json
import os
import re
import stat

from proofflow import settings

MAX_DEPTH = 64  # an input signal of a 3-D array needs 4; a G2 point of snarkjs's JSON 3
MAX_DIGITS = 256  # any field element proofflow knows has at most 116 (381 bits); 256 hold 850 bits

_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_NOT_BRACKETS = bytes(set(range(256)) - set(b"[]{}"))
_AS_SQUARE = bytes.maketrans(b"{}", b"[]")
_STEP = {ord("["): 1, ord("]"): -1}


class JsonRefused(ValueError):
    """A JSON document outside the bounds, or not JSON; the message says which bound or why,
    without the document's content (callers name the file)."""


def load(path) -> object:
    """The JSON document in the plain file ``path``. Raises JsonRefused, or OSError when the
    file cannot be opened."""
    limit = settings.current().json_max_bytes
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # no wait on a FIFO
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise JsonRefused("not a regular file")
        if st.st_size > limit:
            raise JsonRefused(_too_large(st.st_size, limit))
        data = f.read(limit + 1)  # the file may have grown since
    if len(data) > limit:
        raise JsonRefused(_too_large(len(data), limit))
    return loads(data)


def loads(data: bytes) -> object:
    """A JSON document from UTF-8 bytes, within the depth and digit bounds."""
    if too_deep(data):
        raise JsonRefused(f"arrays and objects nested more than {MAX_DEPTH} deep")
    try:
        text = data.decode()
    except UnicodeDecodeError as exc:
        raise JsonRefused(f"not UTF-8 text (byte {exc.start})") from None
    try:
        return json.loads(text, parse_int=_integer, parse_constant=_constant)
    except json.JSONDecodeError as exc:
        raise JsonRefused(f"not JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None


def too_deep(data: bytes) -> bool:
    """Whether the arrays and objects of a JSON text nest more than MAX_DEPTH deep, by a
    running count of its brackets outside strings, MAX_DEPTH brackets at a time: a piece
    whose openers cannot lift the count past the bound is only counted. A closing bracket
    that matches nothing makes the text no JSON before the parser reads on, so the count
    never falls short of how deep the parser would go. (UTF-8 holds no ASCII byte inside
    another character, so the bytes are counted as they are.)"""
    brackets = _STRING.sub(b"", data).translate(_AS_SQUARE, _NOT_BRACKETS)
    level = 0
    for start in range(0, len(brackets), MAX_DEPTH):
        piece = brackets[start:start + MAX_DEPTH]
        opens = piece.count(b"[")
        if level + opens > MAX_DEPTH and max(itertools.accumulate(map(_STEP.__getitem__, piece), initial=level)) \
                > MAX_DEPTH:
            return True
        level += 2 * opens - len(piece)
    return False


def describe(value) -> str:
    """What a JSON value is, by its type and length, never by its content: for errors about
    a user's values."""
    if isinstance(value, bool):
        return "a boolean"
    if value is None:
        return "null"
    if isinstance(value, int):
        return f"an integer of {value.bit_length()} bits"
    if isinstance(value, float):
        return "a number that is not an integer"
    for kind, article, unit in ((str, "a string", "character"), (dict, "an object", "member"),
                                (list, "an array", "item")):
        if isinstance(value, kind):
            return f"{article} of {len(value)} {unit}{'s' * (len(value) != 1)}"
    return type(value).__name__


def _integer(text: str) -> int:
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise JsonRefused(f"an integer of {len(text.lstrip('-'))} digits: more than the {MAX_DIGITS} any field "
                          "element needs")
    return int(text)


def _constant(name: str):
    raise JsonRefused(f"{name.lstrip('-')}: not a JSON number")


def _too_large(size: int, limit: int) -> str:
    return f"{size} bytes: more than the {limit} a JSON file may hold (PROOFFLOW_JSON_MAX_BYTES)"
