"""JSON a user hands proofflow (input.json files, proof_batch's pending work, snarkjs's
public.json, proof.json and verification keys, a key's params.json), read within bounds:
at most ``PROOFFLOW_JSON_MAX_BYTES`` (checked on the open file before reading it; only plain
files), arrays and objects nested at most ``MAX_DEPTH`` deep, integers of at most
``MAX_DIGITS`` digits (Python's int() takes no more than 4,300), and no NaN or Infinity.
Anything else is a ``JsonRefused`` naming the bound, never quoting the content."""
from __future__ import annotations

import json

from proofflow import settings
from proofflow.prover import files

MAX_DEPTH = 64  # an input signal of a 3-D array needs 4; a G2 point of snarkjs's JSON 3
MAX_DIGITS = 256  # any field element proofflow knows has at most 115 (381 bits); 256 hold 850 bits

_TOO_DEEP = f"arrays and objects nested more than {MAX_DEPTH} deep"


class JsonRefused(ValueError):
    """A JSON document outside the bounds, or not JSON; the message says which bound or why,
    without the document's content (callers name the file)."""


def load(path) -> object:
    """The JSON document in the plain file ``path``. Raises JsonRefused, or OSError when the
    file cannot be opened."""
    limit = settings.current().json_max_bytes
    try:
        data = files.read_regular(path, limit)
    except files.NotARegularFile:
        raise JsonRefused("not a regular file") from None
    except files.FileTooLarge as exc:
        raise JsonRefused(_too_large(exc.size, limit)) from None
    return loads(data)


def loads(data: bytes) -> object:
    """A JSON document from UTF-8 bytes, within the depth and digit bounds. Python's parser
    recurses once a level and stops itself at the interpreter's recursion limit (RecursionError,
    a document far too deep); the bound itself is counted on the parsed document, one level
    at a time, without recursion."""
    try:
        text = data.decode()
    except UnicodeDecodeError as exc:
        raise JsonRefused(f"not UTF-8 text (byte {exc.start})") from None
    try:
        document = json.loads(text, parse_int=_integer, parse_constant=_constant)
    except json.JSONDecodeError as exc:
        raise JsonRefused(f"not JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    except RecursionError:
        raise JsonRefused(_TOO_DEEP) from None
    if too_deep(document):
        raise JsonRefused(_TOO_DEEP)
    return document


def too_deep(document) -> bool:
    """Whether a parsed document's arrays and objects nest more than MAX_DEPTH deep."""
    level, containers = 0, [document] if isinstance(document, (list, dict)) else []
    while containers:
        level += 1
        if level > MAX_DEPTH:
            return True
        containers = [child for c in containers for child in (c.values() if isinstance(c, dict) else c)
                      if isinstance(child, (list, dict))]
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
