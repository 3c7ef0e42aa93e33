"""The circuit a name asks for: a built-in family, or a registered circom circuit."""
from __future__ import annotations

from proofflow import spec
from proofflow.prover.circuits import CIRCUITS, Circuit


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
