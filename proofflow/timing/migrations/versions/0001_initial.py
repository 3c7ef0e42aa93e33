"""timing store: runs, task_timings, transfers

Revision ID: 0001
Revises:
Create Date: 2026-12-02
"""
import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

ID = 250


def _pk_id():
    return sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True, autoincrement=True)


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("dag_id", sa.String(ID), nullable=False),
        sa.Column("run_id", sa.String(ID), nullable=False),
        sa.Column("circuit", sa.String(64)),
        sa.Column("log2", sa.Integer),
        sa.Column("partitions", sa.Integer),
        sa.Column("backend", sa.String(16)),
        sa.Column("staging", sa.String(16)),
        sa.Column("seed", sa.BigInteger),
        sa.Column("state", sa.String(32), nullable=False, server_default="running"),
        sa.Column("started_at", sa.DateTime(timezone=True)),
        sa.Column("finished_at", sa.DateTime(timezone=True)),
        sa.Column("wall_s", sa.Float),
        sa.Column("proofs_verified", sa.Integer),
        sa.Column("bundle_dir", sa.Text),
        sa.Column("host", sa.String(255)),
        sa.PrimaryKeyConstraint("dag_id", "run_id", name="pk_runs"),
    )
    op.create_table(
        "task_timings",
        _pk_id(),
        sa.Column("run_id", sa.String(ID), nullable=False),
        sa.Column("dag_id", sa.String(ID), nullable=False),
        sa.Column("task_id", sa.String(ID), nullable=False),
        sa.Column("map_index", sa.Integer, nullable=False, server_default="-1"),
        sa.Column("try_number", sa.Integer, nullable=False),
        sa.Column("partition", sa.Integer),
        sa.Column("phase", sa.String(64), nullable=False),
        sa.Column("host", sa.String(255)),
        sa.Column("device", sa.String(64)),
        sa.Column("start", sa.DateTime(timezone=True), nullable=False),
        sa.Column("end", sa.DateTime(timezone=True), nullable=False),
        sa.Column("duration_s", sa.Float, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_task_timings"),
        sa.UniqueConstraint("dag_id", "run_id", "task_id", "map_index", "try_number", "phase",
                            name="uq_task_timings_attempt_phase"),
    )
    op.create_index("ix_task_timings_run", "task_timings", ["dag_id", "run_id"])
    op.create_table(
        "transfers",
        _pk_id(),
        sa.Column("run_id", sa.String(ID), nullable=False),
        sa.Column("dag_id", sa.String(ID), nullable=False),
        sa.Column("task_id", sa.String(ID), nullable=False),
        sa.Column("map_index", sa.Integer, nullable=False, server_default="-1"),
        sa.Column("partition", sa.Integer),
        sa.Column("try_number", sa.Integer, nullable=False),
        sa.Column("direction", sa.String(16), nullable=False),
        sa.Column("bytes", sa.BigInteger, nullable=False),
        sa.Column("memory_kind", sa.String(16), nullable=False),
        sa.Column("start", sa.DateTime(timezone=True)),
        sa.Column("duration_s", sa.Float, nullable=False),
        sa.Column("gbps", sa.Float),
        sa.PrimaryKeyConstraint("id", name="pk_transfers"),
        sa.UniqueConstraint("dag_id", "run_id", "task_id", "map_index", "try_number", "direction",
                            name="uq_transfers_attempt_direction"),
    )
    op.create_index("ix_transfers_run", "transfers", ["dag_id", "run_id"])


def downgrade() -> None:
    op.drop_index("ix_transfers_run", table_name="transfers")
    op.drop_table("transfers")
    op.drop_index("ix_task_timings_run", table_name="task_timings")
    op.drop_table("task_timings")
    op.drop_table("runs")
