"""Groth16 over a registered curve, one module per protocol role (as in arkworks' groth16 crate):
``data_structures`` (keys, proofs, files), ``r1cs_to_qap`` (the QAP reduction),
``odd_coset`` (snarkjs's QAP bases, H at the odd points of the 2n domain), ``generator``
(setup), ``prover`` and ``verifier``."""
