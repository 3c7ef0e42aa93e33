"""When validate fails, the teardowns still run (#36): cleanup_scratch and publish_summary
ended upstream_failed (their setup, prepare_scratch, never ran), so the run got no summary.
They end success, and the run still ends failed."""
import pytest


def _state(x) -> str:
    return str(getattr(x, "value", x))


@pytest.mark.slow
def test_the_teardowns_run_when_validate_fails(proof_run_dag, monkeypatch, tmp_path):
    from proofflow.airflow.operators import proof as ops
    from proofflow.prover.errors import InputError
    from proofflow.timing import TimingStore
    from proofflow.timing.summary import run_figures
    url = f"sqlite:///{tmp_path / 'timing.db'}"
    monkeypatch.setenv("PROOFFLOW_DB_URL", url)

    def refuse(self, context, rec):
        raise InputError("input 0: refused (injected)")
    monkeypatch.setattr(ops.ValidateOperator, "run", refuse)
    dr = proof_run_dag.test(run_conf={"log2": 10, "partitions": 2, "backend": "cpu"})
    states = {ti.task_id: _state(ti.state) for ti in dr.get_task_instances()}
    assert _state(dr.state) == "failed"
    assert states["validate"] == "failed" and states["setup"] == "upstream_failed"
    assert states["prepare_scratch"] == "upstream_failed"
    assert (states["cleanup_scratch"], states["publish_summary"]) == ("success", "success")
    store = TimingStore(url)
    assert store.run("proof_run", dr.run_id)["state"] == "failed"
    assert run_figures(store, "proof_run", dr.run_id)["state"] == "failed"  # what the summary publishes
