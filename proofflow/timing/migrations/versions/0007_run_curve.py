"""run curve: runs gets curve, the curve a run proves over (rows from before name none: their
runs were over BLS12-381, the only curve then)

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-06
"""
import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("curve", sa.String(32)))


def downgrade() -> None:
    op.drop_column("runs", "curve")  # plain ALTER TABLE: no view reads the column
