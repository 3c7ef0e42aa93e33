"""The trigger form's *Circuit* lists the registered circuits (#36): Airflow 3.3's form showed
the field's ``examples`` only where they matched the value, so with the default in it the
field looked like free text. The description under the field names the circuits registered
when the DAG file is parsed; the field stays free text, so one registered since can still be
triggered."""
import json

import pytest

from proofflow.spec import CIRCUITS


@pytest.fixture
def registered(tmp_path, monkeypatch):
    from proofflow import settings
    for name in ("poseidon", "chain"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "circuit.json").write_text(json.dumps({"name": name}))
    (tmp_path / ".chain.new").mkdir()  # a writer's work directory: never a circuit
    monkeypatch.setenv("PROOFFLOW_CIRCUITS", str(tmp_path))
    settings.reload()
    yield ["chain", "poseidon"]
    monkeypatch.undo()
    settings.reload()


def test_the_form_lists_the_registered_circuits(registered):
    from proofflow.airflow.params import dag_params
    param = dag_params()["circuit"]
    assert param.schema["examples"] == [*CIRCUITS, *registered]
    assert param.description.endswith("Registered: chain, poseidon.")
    assert param.resolve() == "mimc" and param.resolve("registered-later") == "registered-later"
