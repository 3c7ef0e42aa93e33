"""The GPU code's options as the test's settings give them, as an entry point builds them."""
from proofflow import settings
from proofflow.prover.backend.by_name import device_options


def options():
    return device_options(settings.current())
