"""proofflow's proving engine: Groth16 over BLS12-381 on the CPU and the GPU.

Layers, bottom up: ``field`` (Fr), ``polynomial`` (domains, NTT), ``curve`` (G1/G2 through
arkworks), ``r1cs`` and ``circuits`` (constraint systems and synthesis), ``groth16``
(generator, prover, verifier, QAP reduction, data structures), ``backend`` (CPU/GPU).
Nothing here knows about Airflow.
"""
__version__ = "0.1.0"
