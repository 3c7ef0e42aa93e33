"""One operator per proof-run phase (``operators.proof.operators``), thin adapters over
``prover``, and the run parameters (``operators.proof.params``). This package's import
imports nothing: the CLI reads the params before it configures and imports Airflow, and
nothing here imports ``prover`` at module level (DAG files import the operators when parsed).
"""
