"""Airflow side of proofflow: the timing store, hooks, operators and the ``proofflow`` CLI.

Laid out like an Airflow provider: ``operators.timing`` (SQLAlchemy tables, Alembic
migrations, the store, no Airflow import), ``operators.hooks`` (connection lookup through
the task SDK), ``operators.proof`` (one operator per proof-run phase, thin adapters over
``prover``), ``operators.summary`` (a run's summary in the UI: the dag run note and the
Airflow plugin serving the report), ``operators.notifiers`` and ``operators.cli``. Importing this package imports
neither Airflow nor ``prover``.
"""
