"""Fixtures of the circom tests. The toolchain, the test circuits compiled and a small real
ceremony are the session's (tests/helpers/circom_fixtures.py, through tests/conftest.py)."""
from __future__ import annotations

import pytest


@pytest.fixture
def home_at(tmp_path, monkeypatch):
    """Makes the test's directory the home's parts (circuits, bundles, scratch, keys, a
    SQLite timing store) with the given input root; returns the directory."""
    def use(input_root):
        for var, sub in (("PROOFFLOW_CIRCUITS", "circuits"), ("PROOFFLOW_BUNDLES", "bundles"),
                         ("PROOFFLOW_SCRATCH", "scratch"), ("PROOFFLOW_PARAMS_CACHE", "params")):
            monkeypatch.setenv(var, str(tmp_path / sub))
        monkeypatch.setenv("PROOFFLOW_DB_URL", f"sqlite:///{tmp_path / 'timing.db'}")
        monkeypatch.setenv("PROOFFLOW_INPUT_ROOTS", str(input_root))
        return tmp_path
    return use
