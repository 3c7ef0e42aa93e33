"""proofflow's proving engine: Groth16 over the registered curves (BLS12-381, BN254) on the CPU and the GPU.

Layers, bottom up: ``curves`` (each curve's descriptor: its constants, encodings, point
library and pairing; everything above takes one), ``field`` (a curve's Fr), ``polynomial``
(domains, NTT), ``points`` (G1/G2 through the curve's point library, arkworks), ``r1cs``
and ``circuits`` (constraint systems and synthesis), ``groth16``
(generator, prover, verifier, QAP reduction, data structures), ``backend`` (the interface,
the CPU backend) and ``device`` (the GPU), then ``pipeline`` (a partition's stages, shared by
the CLI, the Airflow tasks and the prover service). Nothing here knows about Airflow.
"""
