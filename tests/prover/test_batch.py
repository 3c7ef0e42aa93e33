"""Proving partitions with synthesis writing into staging buffers."""
import dataclasses

import pytest

from proofflow.prover import batch, bundle
from proofflow.prover.backend import get_backend
from proofflow.prover.field import fr
from proofflow.prover.r1cs import UnsatisfiedConstraint
from proofflow.prover.staging import StagingPool


def test_partitions_synthesized_into_the_pool_verify(pk10, mimc10, tmp_path):
    pool = StagingPool(StagingPool.block_size(batch.abc_bytes(mimc10)), pinned=False)
    reports = batch.prove_to_bundle(pk10, mimc10, 3, 5, tmp_path, get_backend("cpu"), pool=pool)
    assert [r.ok for r in bundle.verify_bundle(tmp_path)] == [True] * 3
    stats = pool.stats()
    assert stats["in_use"] == 0 and stats["buffers"] == 1  # one buffer, reused by every partition
    assert stats["high_water"] == pool.budget
    assert all("synthesis" in r.timer.totals() for r in reports)


def test_buffer_is_released_when_synthesis_fails(pk10, mimc10, monkeypatch):
    pool = StagingPool(StagingPool.block_size(batch.abc_bytes(mimc10)), pinned=False)
    honest = mimc10.instance

    def tampered(seed, partition):
        inst = honest(seed, partition)
        w = inst.witness.copy()
        w[10] = fr.from_ints([3])[0]
        return dataclasses.replace(inst, witness=w)

    monkeypatch.setattr(mimc10, "instance", tampered)
    with pytest.raises(UnsatisfiedConstraint):
        batch.prove_partition(pk10, mimc10, 1, 0, get_backend("cpu"), pool)
    assert pool.stats()["in_use"] == 0
