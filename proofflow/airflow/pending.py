"""Pending proof work for ``proof_batch``: one JSON file per requested run (its params) in
``$PROOFFLOW_PENDING`` (default ``$PROOFFLOW_HOME/pending``). A registered circom circuit's
inputs are named relative to the pending directory and stay inside it: an absolute path, a
``..`` or a link leading out is refused (the directory is an input root of the runs it
starts), and so is a work file that is itself a link. Claiming renames a file into
``claimed/`` (atomic, so two batch runs never trigger the same work); a file that is not
valid params goes to ``rejected/`` with the reason next to it."""
from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from proofflow import settings
from proofflow.prover import bounded_json
from proofflow.spec import InvalidParams, validate_params


def _inputs_from(conf: dict, base: Path) -> dict:
    """A circom circuit's input paths, relative to the pending directory, made absolute."""
    inputs = conf.get("inputs")
    if isinstance(inputs, str):
        return {**conf, "inputs": _inside(base, inputs)}
    if isinstance(inputs, list):
        return {**conf, "inputs": [_inside(base, x) if isinstance(x, str) else x for x in inputs]}
    return conf


def _inside(base: Path, name: str) -> str:
    """``name`` in ``base``; a link out of it is refused by ``validate_params``, which
    resolves links against the input roots it is given."""
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts:
        raise InvalidParams(f"input path {name!r} must be relative to the pending directory, without '..'")
    return str(base / path)


def claim(directory: Path | None = None, limit: int = 64) -> list[dict]:
    """Confs for proof_run, one per claimed file (oldest first)."""
    d = Path(directory or settings.current().pending_dir)
    if not d.is_dir():
        return []
    (d / "claimed").mkdir(exist_ok=True)
    (d / "rejected").mkdir(exist_ok=True)
    out = []
    for path in sorted(d.glob("*.json"), key=lambda p: (p.stat().st_mtime, p.name))[:limit]:
        try:
            if path.is_symlink():  # a link would hand another file's content to validate's messages
                raise InvalidParams("a pending work file must be a plain file, not a link")
            conf = bounded_json.load(path)
            if not isinstance(conf, dict):
                raise InvalidParams("a pending work file must hold one JSON object of proof_run params")
            conf = _inputs_from(conf, d)
            # the inputs only in this directory; the GPU itself is checked by proof_run's validate
            validate_params(conf, gpu_available=lambda: True, input_roots=(d,))
        except (ValueError, OSError) as exc:
            try:
                os.replace(path, d / "rejected" / path.name)
                (d / "rejected" / f"{path.name}.error").write_text(f"{exc}\n")
            except FileNotFoundError:
                pass  # claimed by someone else meanwhile
            continue
        try:
            os.replace(path, d / "claimed" / path.name)
        except FileNotFoundError:
            continue
        out.append(conf)
    return out
