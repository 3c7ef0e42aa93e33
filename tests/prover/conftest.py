import pytest

from proofflow.prover.service.client import ServiceClient


@pytest.fixture
def service(tmp_path, monkeypatch):
    """A CPU prover service (device 0) of the test's own runtime directory, started by its
    first request; a module that needs more (a metrics port) defines its own."""
    monkeypatch.setenv("PROOFFLOW_RUNTIME", str(tmp_path / "rt"))
    client = ServiceClient("cpu", 0, idle_s=60)
    yield client
    client.stop()
