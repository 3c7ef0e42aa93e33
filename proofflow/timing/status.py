"""``proofflow status [--json]``: the proving farm of this host at a glance.

Per device whose prover service runs (PROOFFLOW_GPU_DEVICES, either backend; none is started):
its process, the job on the device, the queue, the jobs done and failed, the resident keys
within the key budget; the host's shared staging (leased, idle, budget); then, from the timing
store, the runs in flight and the latest runs with their states and causes of failure (a
duplicate request names the run that holds it). With no service running it says so.
"""
from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass

from proofflow.prover.service.admin import ServiceStatus, StagingState
from proofflow.spec import RunFailure

DAG_ID = "proof_run"


@dataclass(frozen=True)
class RunLine:
    """A run as the status shows it: what it proves, how far it got, why it failed."""
    run_id: str
    state: str
    circuit: str | None
    log2: int | None
    partitions: int | None
    proofs_verified: int | None
    started_at: float | None
    wall_s: float | None
    request_id: str | None
    duplicate_of: str | None
    error: str | None  # the cause's line (RunFailure.line)

    @classmethod
    def of(cls, row: dict) -> "RunLine":
        failure = RunFailure.from_row(row)
        started = row.get("started_at")
        return cls(row["run_id"], row["state"], row.get("circuit"), row.get("log2"), row.get("partitions"),
                   row.get("proofs_verified"), started.timestamp() if started else None, row.get("wall_s"),
                   row.get("request_id"), row.get("duplicate_of"), failure.line() if failure else None)


@dataclass(frozen=True)
class FarmStatus:
    runtime_dir: str
    services: tuple[ServiceStatus, ...]  # each running service's
    staging: StagingState  # the host's
    staging_root: str
    in_flight: tuple[RunLine, ...]
    latest: tuple[RunLine, ...]


def collect(store, latest: int = 10) -> FarmStatus:
    from proofflow import settings
    from proofflow.prover.service.client import running_services
    from proofflow.prover.staging.shared import SharedStaging
    services = tuple(s for _c, s in running_services())
    host = SharedStaging.from_settings().stats()
    return FarmStatus(str(settings.current().runtime_dir), services,
                      StagingState(**{k: host[k] for k in StagingState.__dataclass_fields__}), host["root"],
                      tuple(map(RunLine.of, store.latest_runs(DAG_ID, 100, state="running"))),
                      tuple(map(RunLine.of, store.latest_runs(DAG_ID, latest))))


def _ago(t: float, now: float) -> str:
    return f"{now - t:.1f} s"


def _job(j, now: float) -> str:
    return f"{j.job_id or j.holder or '?'} ({j.circuit} 2^{j.log2}, {_ago(j.since, now)})"


def _run(r: RunLine) -> str:
    if r.duplicate_of:
        return f"  {r.run_id}  duplicate of {r.duplicate_of} (its request)"
    what = f"{r.circuit} 2^{r.log2} x{r.partitions}" if r.circuit else "-"
    done = f", {r.proofs_verified or 0}/{r.partitions} proofs" if r.partitions else ""
    wall = f", wall {r.wall_s:.1f} s" if r.wall_s is not None else ""
    request = f", request {r.request_id}" if r.request_id else ""
    cause = f": {r.error}" if r.error else ""
    return f"  {r.run_id}  {r.state}  {what}{done}{wall}{request}{cause}"


def render(st: FarmStatus, now: float | None = None) -> str:
    from proofflow.prover.service.keys_cli import size
    now = time.time() if now is None else now
    out = [f"prover services (runtime {st.runtime_dir}):"]
    if not st.services:
        out.append("  no prover service running: one starts with the first proof, or `proofflow keys preload NAME`")
    for s in st.services:
        out.append(f"  {s.device}: pid {s.pid}, up {_ago(s.started_at, now)}, "
                   f"{'proving ' + _job(s.running, now) if s.running else 'idle'}; {len(s.queue)} queued; "
                   f"jobs {s.jobs_done} done, {s.jobs_failed} failed, {s.jobs_cancelled} cancelled")
        for j in s.queue:
            out.append(f"    queued: {_job(j, now)}")
        out.append(f"    keys: {len(s.resident_keys)} resident, {size(s.resident_bytes)} of {size(s.key_budget_bytes)}"
                   f", {s.key_evictions} eviction(s)")
        for k in s.resident_keys:
            out.append(f"      {k.circuit} 2^{k.log2} ({k.curve}) {size(k.bytes)}, used {_ago(k.used_at, now)} ago")
        if s.last_error:
            out.append(f"    last error: {s.last_error}")
    g = st.staging
    out.append(f"staging ({st.staging_root}): {size(g.leased)} leased in {g.leases} lease(s), {size(g.idle)} idle, "
               f"budget {size(g.budget)}")
    out.append(f"runs in flight ({DAG_ID}): {len(st.in_flight) or 'none'}")
    out += [_run(r) for r in st.in_flight]
    out.append("latest runs:" if st.latest else "latest runs: none")
    out += [_run(r) for r in st.latest]
    return "\n".join(out)


def cmd_status(args) -> int:
    from proofflow.timing.store import open_store
    st = collect(open_store(), args.runs)
    print(json.dumps(asdict(st)) if args.json else render(st))
    return 0


def add_parser(sub) -> None:
    s = sub.add_parser("status", help="the prover services (queue, resident keys, staging) and the runs in flight "
                                      "and latest",
                       description="Per device whose prover service runs: its state, the job on the device, the "
                                   "queue, the resident keys; the host's staging; the runs in flight and the latest "
                                   "ones with their states and causes of failure (timing store). Starts nothing.")
    s.add_argument("--runs", type=int, default=10, help="how many of the latest runs (default 10)")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_status)
