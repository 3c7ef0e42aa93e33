"""The partition stages of proofflow.prover.pipeline, as the command line runs them: synthesis
writing into staging buffers, proving, the bundle."""
import dataclasses

import pytest

from proofflow.prover import bundle, pipeline
from proofflow.prover.keys import Key
from proofflow.prover.backend.by_name import get_backend
from proofflow.prover.curves.bls12_381 import BLS12_381 as CURVE
from proofflow.prover.field.fr import Fr
from proofflow.prover.staging.pool import StagingPool

fr = Fr.of(CURVE)


def _pool(circuit):
    n = Key(None, circuit.constraint_system).domain_size
    return StagingPool(StagingPool.block_size(pipeline.segment_bytes(n, circuit.num_variables)), pinned=False)


def test_partitions_synthesized_into_the_pool_verify(pk10, mimc10, tmp_path):
    pool = _pool(mimc10)
    timers = pipeline.prove_partitions(Key(pk10, mimc10.constraint_system), mimc10, 3, 5, tmp_path,
                                       get_backend("cpu"), pool)
    assert [r.ok for r in bundle.verify_bundle(tmp_path)] == [True] * 3
    stats = pool.stats()
    assert stats["in_use"] == 0 and stats["buffers"] == 1  # one buffer, reused by every partition
    assert stats["high_water"] == pool.budget
    assert all("synthesis" in t.totals() for t in timers)


def test_buffer_is_released_when_synthesis_fails(pk10, mimc10, monkeypatch):
    pool = _pool(mimc10)
    honest = mimc10.instance

    def tampered(seed, partition, input=None):
        inst = honest(seed, partition)
        w = inst.witness.copy()
        w[10] = fr.from_ints([3])[0]
        return dataclasses.replace(inst, witness=w)

    monkeypatch.setattr(mimc10, "instance", tampered)
    with pytest.raises(pipeline.InputError, match="does not satisfy the circuit: witness does not satisfy"):
        pipeline.synthesize(mimc10, 1, 0, pool)
    assert pool.stats()["in_use"] == 0


def test_the_witness_is_staged_behind_abc_in_the_same_buffer(mimc10):
    """Laid out as a shared segment, so a pinned pool's buffer page-locks the witness too."""
    import numpy as np
    pool = _pool(mimc10)
    with pipeline.synthesize(mimc10, 1, 0, pool) as staged:
        n, nv = mimc10.domain_size, mimc10.num_variables
        words = staged.buffer.view(np.uint64, ((3 * n + nv) * 4,))
        assert np.shares_memory(staged.witness, words[3 * n * 4:]) and staged.witness.shape == (nv, 4)
        assert np.array_equal(staged.witness, mimc10.instance(1, 0).witness)
        for k, v in enumerate(staged.abc):
            assert np.shares_memory(v, words[k * n * 4:(k + 1) * n * 4])


def test_cpu_staging_is_pageable_and_recorded_so(pk10, mimc10):
    """The CPU backend has no page-locked memory: a 'pinned' request is pageable there, and
    the transfers say so."""
    from proofflow import spec
    assert spec.resolve_staging("pinned", "cpu") == "pageable"
    assert spec.resolve_staging("pinned", "gpu") == "pinned"
    key = Key(pk10, mimc10.constraint_system)
    transfers = {}
    with pipeline.synthesize(mimc10, 1, 0, _pool(mimc10)) as staged:
        assert staged.memory_kind == "pageable"
        pipeline.prove(key, staged, get_backend("cpu"), transfers=transfers)
    assert {t.kind for t in transfers.values()} == {"pageable"}
