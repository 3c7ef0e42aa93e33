"""What can be wrong with a user's circom files, one exception type per kind.

Every type is a ValueError, so callers that only tell good input from bad need not know
them; ``UnsatisfiedConstraint`` is the engine's own (``proofflow.prover.r1cs``)."""
from __future__ import annotations

from proofflow.prover.curves import registry
from proofflow.prover.r1cs import UnsatisfiedConstraint

__all__ = ["CircomFileError", "CorruptFile", "WrongField", "NotEvmCurve", "KeyMismatch", "InputRejected",
           "GeneratorFailed", "UnsatisfiedConstraint"]

# Primes circom and snarkjs offer besides the registered curves' fields, named in errors.
_OTHER_PRIMES = {
    0xFFFFFFFF00000001: "the Goldilocks field",
}


def describe_field(found: int | str | None) -> str:
    """A prime by the field it defines, or a JSON file's curve name."""
    if isinstance(found, int):
        for c in registry.CURVES.values():
            if found in (c.fr.modulus, c.fq.modulus):
                return f"the {c.label} {'scalar' if found == c.fr.modulus else 'base'} field"
        return _OTHER_PRIMES.get(found, f"an unknown prime 0x{found:x}")
    return f"the curve {found!r}"


class CircomFileError(ValueError):
    """Base of the file errors: ``path`` names the file."""

    def __init__(self, path, message: str):
        self.path, self.detail = str(path), message  # detail: what is wrong, without the file's name
        super().__init__(f"{self.path}: {message}")


class CorruptFile(CircomFileError):
    """Truncated, corrupt, or not the kind of file expected; ``section`` names the part
    (a section id of the binary container, or a JSON field) when one is to blame."""

    def __init__(self, path, message: str, section: int | str | None = None):
        self.section = section
        where = "" if section is None else (f"section {section}: " if isinstance(section, int) else f"{section}: ")
        super().__init__(path, where + message)


class WrongField(CircomFileError):
    """The file is for no registered curve, or not for the one expected: ``found`` is the
    prime a binary file names, or the curve a JSON file names; ``expected`` the prime or
    name wanted (None: any registered curve's scalar field, or curve name)."""

    def __init__(self, path, found: int | str | None, expected: int | str | None = None):
        self.found, self.expected = found, expected
        if expected is not None:
            wanted = describe_field(expected)
        elif isinstance(found, int):
            wanted = " or ".join(describe_field(c.fr.modulus) for c in registry.CURVES.values())
        else:
            wanted = " or ".join(describe_field(c.snarkjs_name) for c in registry.CURVES.values())
        names = " or ".join(c.snarkjs_name for c in registry.CURVES.values())
        super().__init__(path, f"made for {describe_field(found)}, not {wanted} "
                               f"(compile with circom -p {names} and use a ceremony of that curve)")


class NotEvmCurve(CircomFileError):
    """A proof Ethereum cannot verify: its precompiles (EIP-196/197) pair on BN254 only.
    ``found`` is the curve the proof's JSON names."""

    def __init__(self, path, found):
        self.found = found
        super().__init__(path, f"made on {describe_field(found)}, but Ethereum verifies Groth16 proofs on bn128 "
                               "(BN254) only, the curve of its pairing precompiles (EIP-196/197): compile with "
                               "circom -p bn128 and use a bn128 ceremony for a proof with Solidity calldata")


class KeyMismatch(ValueError):
    """A zkey that was not set up for this r1cs (or witness); ``what`` names the first
    difference."""

    def __init__(self, what: str, detail: str, against: str = "the r1cs"):
        self.what = what
        super().__init__(f"the zkey does not match {against}: {what} differs ({detail})")


class InputRejected(ValueError):
    """Inputs a circuit's witness generator does not take: a signal it lacks, a wrong
    number of values, a value outside the field, or a failing assert. ``source`` names the
    input file (None for inputs given as a dict), ``detail`` what is wrong, with what the
    circuit said."""

    def __init__(self, source, detail: str):
        self.source = None if source is None else str(source)
        self.detail = detail
        super().__init__(f"{self.source}: {detail}" if self.source else detail)


class GeneratorFailed(ValueError):
    """A registered C++ witness generator (``circom --c``) that exited with an error (a
    failing assert, a crash), or wrote no witness or one that is not the circuit's.
    ``circuit`` names the circuit."""

    def __init__(self, circuit: str, detail: str):
        self.circuit = circuit
        super().__init__(f"circuit {circuit!r}: its C++ witness generator {detail}")
