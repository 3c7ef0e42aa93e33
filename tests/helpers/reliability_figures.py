"""The figures the reliability tests report: collected here while they run (in each
pytest-xdist worker, then merged in the controller), printed in pytest's terminal summary
(conftest.py), and written to bench/results/reliability.json by the long version
(``pytest -m reliability --soak``)."""
from __future__ import annotations

FIGURES: dict = {}
_COUNTS: set = set()  # the names add() counts: pytest-xdist workers' counts of one name add up


def add(name: str, n: int = 1) -> None:
    """Count ``n`` more of ``name`` (inputs tried, faults injected, runs completed...)."""
    _COUNTS.add(name)
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


def export() -> dict:
    """This process's figures, as a pytest-xdist worker sends them to the controller."""
    return {"figures": FIGURES, "counts": sorted(_COUNTS)}


def merge(exported: dict | None) -> None:
    """A worker's ``export()`` into this process's figures: counts added, other values taken."""
    if exported:
        for name, value in exported["figures"].items():
            if name in exported["counts"]:
                add(name, value)
            else:
                put(name, value)
