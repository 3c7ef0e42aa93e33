"""The circuit a name asks for: a built-in family, or a registered circom circuit."""
from __future__ import annotations

from proofflow import spec
from proofflow.prover.circuits import CIRCUITS, Circuit
from proofflow.prover.curves import registry


def get_circuit(name: str, log2: int, curve: str = registry.DEFAULT) -> Circuit:
    """A built-in family at size 2^log2 over the curve named ``curve``, or a registered circom
    circuit (whose size and curve are its own: ``log2`` and ``curve`` must match them)."""
    descriptor = registry.get_curve(curve)
    if name not in CIRCUITS:
        if spec.circuit_info(name) is None:
            raise ValueError(f"unknown circuit {name!r}: known circuits are "
                             f"{', '.join([*sorted(CIRCUITS), *spec.registered_circuits()])}")
        from proofflow.prover.circom.circuit import RegisteredCircuit
        circuit = RegisteredCircuit(name)
        if log2 != circuit.log2:
            raise ValueError(f"circuit {name!r} has a domain of 2^{circuit.log2}, not 2^{log2}")
        if circuit.curve.name != curve:
            raise ValueError(f"circuit {name!r} is over {circuit.curve.name}, not {curve}")
        return circuit
    if not isinstance(log2, int) or not spec.MIN_LOG2 <= log2 <= spec.MAX_LOG2:
        raise ValueError(f"log2 must be an integer in {spec.MIN_LOG2}..{spec.MAX_LOG2}, got {log2!r}")
    return CIRCUITS[name](log2, descriptor)
