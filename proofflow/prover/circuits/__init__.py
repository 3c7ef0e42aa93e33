"""Circuit families, chosen by name and sized by log2 of the constraint count."""
from __future__ import annotations

from proofflow import spec
from proofflow.prover.circuits.base import Circuit, Instance
from proofflow.prover.circuits.bits import BitsChain
from proofflow.prover.circuits.mimc import MimcChain

CIRCUITS: dict[str, type[Circuit]] = {MimcChain.name: MimcChain, BitsChain.name: BitsChain}
assert tuple(CIRCUITS) == spec.CIRCUITS, "spec.CIRCUITS names the circuit families registered here"


def get_circuit(name: str, log2: int) -> Circuit:
    """A built-in family at size 2^log2, or a registered circom circuit (whose size is its own:
    ``log2`` must match it)."""
    if name not in CIRCUITS:
        if spec.circuit_info(name) is None:
            raise ValueError(f"unknown circuit {name!r}: known circuits are "
                             f"{', '.join([*sorted(CIRCUITS), *spec.registered_circuits()])}")
        from proofflow.prover.circom.circuit import RegisteredCircuit
        circuit = RegisteredCircuit(name)
        if log2 != circuit.log2:
            raise ValueError(f"circuit {name!r} has a domain of 2^{circuit.log2}, not 2^{log2}")
        return circuit
    if not isinstance(log2, int) or not spec.MIN_LOG2 <= log2 <= spec.MAX_LOG2:
        raise ValueError(f"log2 must be an integer in {spec.MIN_LOG2}..{spec.MAX_LOG2}, got {log2!r}")
    return CIRCUITS[name](log2)


__all__ = ["CIRCUITS", "Circuit", "Instance", "get_circuit"]
