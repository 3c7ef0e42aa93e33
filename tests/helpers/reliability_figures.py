"""The figures the reliability tests report: collected here while they run, printed in
pytest's terminal summary (conftest.py), and written to bench/results/reliability.json by
the long version (``pytest -m reliability --soak``)."""
from __future__ import annotations

FIGURES: dict = {}


def add(name: str, n: int = 1) -> None:
    """Count ``n`` more of ``name`` (inputs tried, faults injected, runs completed...)."""
    FIGURES[name] = FIGURES.get(name, 0) + n


def put(name: str, value) -> None:
    FIGURES[name] = value


def count_proofs(expected: int, results) -> None:
    """A finished run's proofs: ``results`` from ``verify_bundle``; lost = expected partitions
    without a verifying proof, duplicated = partitions with more than one."""
    parts = [r.partition for r in results if r.ok]
    add("proofs expected", expected)
    add("proofs verified", len(set(parts)))
    lost = expected - len(set(parts) & set(range(expected)))
    add("proofs lost or duplicated", lost + len(parts) - len(set(parts)))
