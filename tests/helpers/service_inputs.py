"""A proving key and partitions' inputs as proof_run leaves them for the prover service
(a/b/c and witness in a shared segment), and the jobs naming them: shared by the service
tests."""
from __future__ import annotations

from pathlib import Path


LOG2 = 8


def make_key(d: Path, log2: int = LOG2, seed: int = 5) -> Path:
    from proofflow.prover.circuits.by_name import get_circuit
    from proofflow.prover.groth16 import generator
    generator.setup(get_circuit("mimc", log2), seed=seed).save(d)
    return d


def holder(partition: int, run: str = "run") -> str:
    return f"test/{run}/p{partition:04d}"


def partition(partition: int, log2: int = LOG2, seed: int = 11, run: str = "run"):
    """(segment id, n, public inputs) of one partition of ``run`` synthesized into this
    test's shared staging (its directory comes from the environment: tests/conftest.py)."""
    from proofflow.prover import pipeline
    from proofflow.prover.staging.shared import SharedStaging
    from proofflow.prover.circuits.by_name import get_circuit
    out = pipeline.synthesize_shared(get_circuit("mimc", log2), seed, partition, SharedStaging.from_settings(),
                                     holder(partition, run))
    return out["segment"], out["n"], [int(x, 16) for x in out["public_inputs"]]


def job(key_dir: Path, segment: str, n: int, log2: int = LOG2, partition: int | None = None, **extra):
    """A ProveJob for ``segment`` (its holder checked when ``partition`` is given)."""
    from proofflow.prover.service.protocol import ProveJob
    from proofflow.spec import MemoryKind
    return ProveJob(str(key_dir), "mimc", log2, "bls12_381", segment, n, MemoryKind.PINNED,
                    holder(partition) if partition is not None else None, **extra)


def raw_prove(client, job: dict) -> dict:
    """Send a prove request as written (a malformed one too): the service must refuse it."""
    return client._request({"op": "prove", "job": job}, 60)


def spans(reply) -> dict:
    """A ProveReply's spans by phase."""
    return {s.phase: (s.start, s.end) for s in reply.spans}


def verifies(key_dir: Path, reply, public) -> bool:
    from proofflow.prover.groth16 import verifier
    from proofflow.prover.groth16.data_structures import Proof, VerifyingKey
    vk = VerifyingKey.load(Path(key_dir) / "vk.json")
    return verifier.verify(vk, public, Proof.from_bytes(vk.curve, reply.proof))


class Blockers:
    """High-priority jobs of another run keeping a prover service's device busy, one after
    another, three in flight (one on the device, one uploaded, one queued): a job of a
    normal or low run waits in the queue for as long as they come. Their segments go back
    to the staging at the end."""

    def __init__(self, key_dir: Path, standin_s: float = 0.4, run: str = "blocker"):
        import threading
        from proofflow.spec import MemoryKind, Priority, RunConfig
        self.stop, self.proofs, self.errors = threading.Event(), 0, []
        self.run, self._segments = run, []
        config = RunConfig("mimc", LOG2, 3, "cpu", MemoryKind.PINNED, priority=Priority.HIGH)
        self._threads = [threading.Thread(target=self._loop, args=(key_dir, config, i, standin_s)) for i in range(3)]

    def _loop(self, key_dir, config, i, standin_s):
        from proofflow.prover.provers import prover_for
        segment, n, _ = partition(i, run=self.run)
        self._segments.append(segment)
        prover = prover_for(config, i, True, [0], standin_s)
        while not self.stop.is_set():
            try:
                prover.prove(key_dir, segment, holder(i, self.run), n, f"{self.run}/{i}")
                self.proofs += 1
            except Exception as exc:  # the test reads them
                self.errors.append(exc)
                return

    def __enter__(self) -> "Blockers":
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc) -> None:
        from proofflow.prover.staging.shared import SharedStaging
        self.stop.set()
        for t in self._threads:
            t.join(60)
        staging = SharedStaging.from_settings()
        for segment in self._segments:
            staging.release(segment)
