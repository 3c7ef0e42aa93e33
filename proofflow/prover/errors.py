"""The engine's errors that callers sort on: inputs that proving again cannot fix, a staging
budget without room. Kept apart from the modules that raise them (and free of imports) so
an Airflow task can tell them apart without importing the prover."""


class InputError(ValueError):
    """A partition's inputs are unusable (missing, truncated, of another shape or key):
    proving them again cannot help."""


class ProofCheckFailed(ValueError):
    """A fresh proof that does not verify; the message says why (the witness, the a/b/c
    vectors, or the key and backend)."""


class StagingTimeout(TimeoutError):
    """No room in the staging budget within the timeout."""
