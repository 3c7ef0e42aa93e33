"""Verifying snarkjs Groth16 proofs: the engine's pairing check, with snarkjs's rule that
every public signal must be a field element (one at or above r is rejected, not reduced)."""
from __future__ import annotations

from proofflow.prover.circom import snarkjs_json
from proofflow.prover.groth16 import verifier
from proofflow.prover.groth16.data_structures import Proof, VerifyingKey


def verify(vk: VerifyingKey, public: list[int], proof: Proof) -> bool:
    """True when ``proof`` proves ``public`` under ``vk``. A wrong number of public signals
    is the caller's error (ValueError), as in the engine's verifier."""
    if not all(0 <= x < vk.curve.fr.modulus for x in public):
        return False
    return verifier.verify(vk, public, proof)


def verify_files(vk_path, public_path, proof_path) -> bool:
    """``snarkjs groth16 verify`` on its three JSON files. Files that cannot be read as
    what they should be (including proof points off the curve) raise CorruptFile."""
    return verify(snarkjs_json.read_verification_key(vk_path), snarkjs_json.read_public(public_path),
                  snarkjs_json.read_proof(proof_path))
