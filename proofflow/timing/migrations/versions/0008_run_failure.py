"""run failure: runs gets failed_task, failed_map_index, failed_input and error, why a failed
run failed as its failing task saw it (spec.RunFailure; rows from before name no cause)

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-06
"""
import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

COLUMNS = (("failed_task", sa.String(250)), ("failed_map_index", sa.Integer()), ("failed_input", sa.Text()),
           ("error", sa.Text()))


def upgrade() -> None:
    for name, kind in COLUMNS:
        op.add_column("runs", sa.Column(name, kind))


def downgrade() -> None:
    for name, _kind in reversed(COLUMNS):
        op.drop_column("runs", name)  # plain ALTER TABLE: no view reads these columns
