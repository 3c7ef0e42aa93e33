"""snarkjs's verifier contract for the session's BN254 chain circuit (bn128_chain, with
bn128_gadgets and the toolchain, from tests/helpers/circom_fixtures.py through
tests/conftest.py), compiled for the in-process EVM (tests/helpers/evm.py) once per session
when a test asks."""
from __future__ import annotations

import pytest

import evm


@pytest.fixture(scope="session")
def contract(toolchain, bn128_chain) -> evm.VerifierContract:
    """snarkjs's verifier contract for the circuit's zkey, compiled once."""
    return evm.verifier_contract(toolchain, bn128_chain.zkey, bn128_chain.dir / "contract")
