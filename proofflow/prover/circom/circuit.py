"""A registered circom circuit as a proof run's circuit: its constraint system from the
registered r1cs, a partition's witness from the partition's input (a .wtns, or an
input.json / input object run through the registered C++ witness generator where there is
one, else the registered .wasm), over the curve its files are
for (circuit.json's ``curve``; circuits registered before it was recorded: the default)."""
from __future__ import annotations

from pathlib import Path

from proofflow import settings, spec
from proofflow.prover.circom import registry as circuits
from proofflow.prover.circom.r1cs import read_r1cs
from proofflow.prover.circom.wtns import read_wtns
from proofflow.prover.circuits.base import Circuit, Instance
from proofflow.prover.curves import registry as curves
from proofflow.prover.r1cs import ConstraintSystem


class RegisteredCircuit(Circuit):
    def __init__(self, name: str):
        self.info = circuits.get(name)
        super().__init__(int(self.info["log2"]), curves.get_curve(self.info.get("curve", curves.DEFAULT)))
        self.name = name
        self.dir = circuits.circuit_dir(name)
        self.cache_version = self.info["files"]["r1cs"]["sha256"][:16]

    def _build(self) -> ConstraintSystem:
        return read_r1cs(self.dir / "circuit.r1cs", self.curve).cs

    def witness(self, input):
        """The full witness of ``input``: a .wtns path, an input.json path or an input object.
        A file is read only in the input roots, its real path checked again here: the run's
        config may not have come through ``validate``, and a link may have moved since."""
        if isinstance(input, (str, Path)):
            real = spec.inside_input_roots(input, settings.current().run_input_roots, "the file")
            if Path(input).suffix == ".wtns":
                return read_wtns(real, self.curve)
            input = real
        if not self.info.get("wasm"):
            raise ValueError(f"circuit {self.name!r} was registered without its .wasm: give .wtns witnesses")
        from proofflow.prover.circom.witness import calculate_witness, read_inputs
        if self.info.get("witness_generator"):
            from proofflow.prover.circom.native_witness import run_generator
            values, _ = read_inputs(input, self.curve)
            return run_generator(self.dir / circuits.GENERATOR, self.name, values, self.curve,
                                 self.constraint_system.num_variables)
        return calculate_witness(self.dir / "circuit.wasm", input, self.curve, f"circuit {self.name!r}")

    def instance(self, seed: int, partition: int, input=None) -> Instance:
        if input is None:
            raise ValueError(f"circuit {self.name!r} needs an input for partition {partition}")
        w = self.witness(input)
        n = self.constraint_system.num_variables
        if w.shape[0] != n:  # the caller names the input
            raise ValueError(f"its witness has {w.shape[0]} signals, circuit {self.name!r} has {n}")
        return Instance(partition, self.fr.to_ints(w[1:1 + int(self.info["public"])]), w)
