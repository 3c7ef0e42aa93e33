"""Idempotent submission: a proof run whose conf carries a ``request_id`` that an earlier run
of the same DAG holds proves nothing and points at that run.

The first run to write its ``runs`` row with the request id holds it (``TimingStore.
claim_request``: a unique index on (dag_id, request_id), so two runs triggered at once cannot
both win, on SQLite and Postgres alike). A later run of the same request, whatever the
earlier one's state (running, success, failed), is recorded with state ``duplicate`` and
``duplicate_of`` naming the holder; ``validate`` then skips the rest of the run. A request id
reused for other parameters is refused, naming them. A failed request is proved again by
clearing its run in Airflow (it holds its own request id) or under a new request id."""
from __future__ import annotations

import time
from dataclasses import dataclass

from proofflow import spec

# what a request asks for, as the runs row records it: a request id reused with other values
# is a client's mistake, refused rather than answered with another request's proofs
COMPARED = ("circuit", "log2", "partitions", "curve", "seed", "backend_requested", "staging_requested")


@dataclass(frozen=True)
class Served:
    """The run that holds a request, as a later run of the same request found it."""
    request_id: str
    run_id: str
    state: str
    bundle_dir: str | None

    def line(self) -> str:
        where = f", bundle {self.bundle_dir}" if self.bundle_dir else ""
        return f"request {self.request_id!r} is run {self.run_id} ({self.state}{where}): not proved again"


def claim(store, dag_id: str, run_id: str, request_id: str, fields: dict) -> Served | None:
    """Record run ``run_id`` (its ``runs`` row: ``fields``) as holding ``request_id``; None
    when it does (a first run, or the holder itself run again, e.g. cleared in Airflow). When
    another run holds it: this run's row is recorded as its duplicate, and the holder is
    returned. Raises ``spec.InvalidParams`` when the holder asked for other parameters."""
    holder = store.claim_request(dag_id, run_id, request_id, **fields)
    if holder is None:
        return None
    differs = [f"{k} {holder[k]!r} there, {fields.get(k)!r} here" for k in COMPARED if holder.get(k) != fields.get(k)]
    if differs:
        raise spec.InvalidParams(f"request_id {request_id!r} is run {holder['run_id']}'s, which asked for other "
                                 f"parameters ({'; '.join(differs)}): give this request an id of its own")
    store.upsert_run(dag_id, run_id, state="duplicate", duplicate_of=holder["run_id"],
                     started_at=fields.get("started_at"), finished_at=time.time(), host=fields.get("host"))
    return Served(request_id, holder["run_id"], holder["state"], holder.get("bundle_dir"))


def served(store, dag_id: str, row: dict) -> Served | None:
    """For a duplicate run's ``runs`` row: the run holding its request, as it stands now."""
    if not row or not row.get("duplicate_of"):
        return None
    holder = store.run(dag_id, row["duplicate_of"]) or {}
    return Served(holder.get("request_id") or "?", row["duplicate_of"], holder.get("state") or "unknown",
                  holder.get("bundle_dir"))
