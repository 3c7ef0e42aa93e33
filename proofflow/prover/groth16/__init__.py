"""Groth16 over BLS12-381, one module per protocol role (as in arkworks' groth16 crate):
``data_structures`` (keys, proofs, files), ``r1cs_to_qap`` (the QAP reduction),
``generator`` (setup), ``prover`` and ``verifier``."""
