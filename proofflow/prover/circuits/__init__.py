"""Circuit families, chosen by name and sized by log2 of the constraint count
(``by_name.get_circuit``, which also finds the registered circom circuits: not imported
here, as those build on ``base`` and importing them runs this file first)."""
from __future__ import annotations

from proofflow import spec
from proofflow.prover.circuits.base import Circuit, Instance
from proofflow.prover.circuits.bits import BitsChain
from proofflow.prover.circuits.mimc import MimcChain

CIRCUITS: dict[str, type[Circuit]] = {MimcChain.name: MimcChain, BitsChain.name: BitsChain}
assert tuple(CIRCUITS) == spec.CIRCUITS, "spec.CIRCUITS names the circuit families registered here"

__all__ = ["CIRCUITS", "Circuit", "Instance"]
