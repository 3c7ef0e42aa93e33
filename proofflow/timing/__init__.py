"""The timing store: SQLAlchemy 2 tables under Alembic migrations (no Airflow import here)."""
from proofflow.timing.models import metadata, runs, task_timings, transfers
from proofflow.timing.store import TimingStore, schema_sql

__all__ = ["metadata", "runs", "task_timings", "transfers", "TimingStore", "schema_sql"]
