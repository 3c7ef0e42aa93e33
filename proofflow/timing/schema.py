"""``python -m proofflow.timing.schema [PATH]``: write the Postgres DDL (``sql/schema.sql``)."""
import sys
from pathlib import Path

from proofflow.timing.store import schema_sql

if __name__ == "__main__":
    path = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2] / "sql" / "schema.sql")
    path.write_text(schema_sql())
    print(f"wrote {path}")
