"""circom circuits with snarkjs Groth16 keys on a registered curve (BLS12-381, BN254).

Users bring a circuit's ``.r1cs``, a witness (``.wtns``) and a ``.zkey`` from a snarkjs
ceremony of that curve (``-p bls12381``, ``-p bn128``); each file's prime (or, in JSON, its curve name)
names the curve, and a file of a curve not registered in ``proofflow.prover.curves`` is
refused (WrongField). Proofs made here verify in ``snarkjs groth16 verify``, and
snarkjs's proofs verify here. Readers for the binary files (``r1cs``, ``wtns``, ``zkey``,
over their shared container ``binfile``) and the JSON files (``snarkjs_json``), the
prover and the verifier. ``setup.write_test_zkey`` writes a test-only zkey from an r1cs
and a seed, without a ceremony; ``witness.calculate_witness`` computes a witness from
input.json and the circuit's .wasm (it needs wasmtime, so it is imported from its module).
Bad input raises the ValueErrors of ``errors``.
"""
from proofflow.prover.circom.errors import (CorruptFile, InputRejected, KeyMismatch, UnsatisfiedConstraint,
                                           WrongField)
from proofflow.prover.circom.prover import prove, public_signals
from proofflow.prover.circom.r1cs import R1cs, read_r1cs
from proofflow.prover.circom.setup import write_test_zkey
from proofflow.prover.circom.snarkjs_json import (read_proof, read_public, read_verification_key, write_proof,
                                                  write_public, write_verification_key)
from proofflow.prover.circom.verifier import verify, verify_files
from proofflow.prover.circom.wtns import read_wtns
from proofflow.prover.circom.zkey import ZKey, read_zkey

__all__ = ["CorruptFile", "InputRejected", "KeyMismatch", "R1cs", "UnsatisfiedConstraint", "WrongField", "ZKey",
           "prove", "public_signals", "read_proof", "read_public", "read_r1cs", "read_verification_key", "read_wtns",
           "read_zkey", "verify", "verify_files", "write_proof", "write_public", "write_test_zkey",
           "write_verification_key"]
