"""run request: runs gets request_id, the client's idempotency key, unique per dag (the index
makes a run's claim of it atomic), and duplicate_of, the run that holds the request of a run
that proved nothing (proofflow.timing.requests; rows from before hold none)

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-06
"""
import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("request_id", sa.String(128)))
    op.add_column("runs", sa.Column("duplicate_of", sa.String(250)))
    op.create_index("uq_runs_request", "runs", ["dag_id", "request_id"], unique=True)


def downgrade() -> None:
    op.drop_index("uq_runs_request", table_name="runs")
    op.drop_column("runs", "duplicate_of")  # plain ALTER TABLE: no view reads these columns
    op.drop_column("runs", "request_id")
