"""Pending proof work for ``proof_batch``: one JSON file per requested run (its params) in
``$PROOFFLOW_PENDING`` (default ``$PROOFFLOW_HOME/pending``). A registered circom circuit's
inputs may be named relative to the file's directory. Claiming renames a file into
``claimed/`` (atomic, so two batch runs never trigger the same work); a file that is not
valid params goes to ``rejected/`` with the reason next to it."""
from __future__ import annotations

import json
import os
from pathlib import Path

from proofflow import settings


def _inputs_from(conf: dict, base: Path) -> dict:
    """A circom circuit's input paths, relative to the pending file's directory, made absolute."""
    inputs = conf.get("inputs")
    if isinstance(inputs, str):
        return {**conf, "inputs": str(base / inputs)}
    if isinstance(inputs, list):
        return {**conf, "inputs": [str(base / x) if isinstance(x, str) else x for x in inputs]}
    return conf


def claim(directory: Path | None = None, limit: int = 64) -> list[dict]:
    """Confs for proof_run, one per claimed file (oldest first)."""
    from proofflow.spec import InvalidParams, validate_params
    d = Path(directory or settings.current().pending_dir)
    if not d.is_dir():
        return []
    (d / "claimed").mkdir(exist_ok=True)
    (d / "rejected").mkdir(exist_ok=True)
    out = []
    for path in sorted(d.glob("*.json"), key=lambda p: (p.stat().st_mtime, p.name))[:limit]:
        try:
            conf = json.loads(path.read_text())
            if not isinstance(conf, dict):
                raise InvalidParams("a pending work file must hold one JSON object of proof_run params")
            conf = _inputs_from(conf, path.parent)
            validate_params(conf, gpu_available=lambda: True)  # the GPU itself is checked by proof_run's validate
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
