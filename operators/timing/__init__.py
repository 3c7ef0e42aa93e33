"""The timing store: SQLAlchemy 2 tables under Alembic migrations (no Airflow import here)."""
from operators.timing.models import metadata, runs, task_timings, transfers
from operators.timing.store import TimingStore, schema_sql

__all__ = ["metadata", "runs", "task_timings", "transfers", "TimingStore", "schema_sql"]
