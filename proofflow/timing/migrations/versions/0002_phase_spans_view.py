"""phase_spans: the phase spans inside prove_gpu, as a view over task_timings

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-02
"""
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

# Frozen copy of proofflow/timing/views.py PHASE_SPANS at this revision.
PHASE_SPANS = """CREATE VIEW phase_spans AS
SELECT run_id, dag_id, task_id, map_index, try_number, partition, phase, host, device,
       start, "end", duration_s
FROM task_timings
WHERE task_id LIKE '%prove_gpu'
  AND phase IN ('pool_wait', 'load', 'h2d', 'ntt', 'msm', 'd2h', 'finalize')"""


def upgrade() -> None:
    op.execute(PHASE_SPANS)


def downgrade() -> None:
    op.execute("DROP VIEW IF EXISTS phase_spans")
