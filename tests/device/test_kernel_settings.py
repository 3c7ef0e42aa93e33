"""Which curve kernels a GPU prover runs, chosen by the environment without a code change:
PROOFFLOW_CURVE_VARIANT (the product variant of msm.cu, fixed_base.cu and bitsum.cu, and
the modules `proofflow kernels build` compiles), PROOFFLOW_MSM_BALANCED (the MSMs'
accumulation in balanced spans), checked on the CPU twin of the kernels."""
from __future__ import annotations

import numpy as np
import pytest

from proofflow import settings
from proofflow.prover import points
from proofflow.prover.backend.by_name import device_options
from proofflow.prover.curves import registry
from proofflow.prover.curves.bls12_381 import BLS12_381 as CURVE
from proofflow.prover.device import cache, pippenger, source
from proofflow.prover.field.fr import Fr
import kernel_twin as twin

fr = Fr.of(CURVE)


def test_the_curve_variant_defaults_to_each_groups_best_and_is_checked(monkeypatch):
    assert settings.CURVE_VARIANTS == source.CURVE_VARIANTS  # the setting's choices are the kernels'
    for raw in (None, " Auto"):
        if raw is None:
            monkeypatch.delenv("PROOFFLOW_CURVE_VARIANT", raising=False)
        else:
            monkeypatch.setenv("PROOFFLOW_CURVE_VARIANT", raw)
        configured = device_options(settings.current()).curve_variant
        assert configured is None
        assert [source.curve_variant(c, g, configured) for c in ("bls12_381", "bn254") for g in ("g1", "g2")] == \
            ["call", "call", "wide", "call"]
    monkeypatch.setenv("PROOFFLOW_CURVE_VARIANT", " Mul32 ")
    configured = device_options(settings.current()).curve_variant
    assert configured == "mul32" and source.curve_variant("bn254", "g1", configured) == "mul32"
    monkeypatch.setenv("PROOFFLOW_CURVE_VARIANT", "mul64")  # an NTT variant: its curve kernels are mul32's
    with pytest.raises(ValueError, match="PROOFFLOW_CURVE_VARIANT must be auto or one of mul32, wide, call"):
        settings.current()


def test_the_kernel_build_takes_the_configured_variant(monkeypatch):
    monkeypatch.delenv("PROOFFLOW_CURVE_VARIANT", raising=False)
    assert cache.modules(settings.current().curve_variant) == cache.MODULES
    monkeypatch.setenv("PROOFFLOW_CURVE_VARIANT", "wide")
    extra = [m.label for m in cache.modules(settings.current().curve_variant)[len(cache.MODULES):]]
    assert extra == [f"{name}-wide-{g}-{c}" for c in registry.NAMES for name in ("msm", "fixed_base", "bitsum", "decompress")
                     for g in ("g1", "g2") if (c, g) != ("bn254", "g1")]  # BN254's G1 is wide already


def test_balanced_is_a_switch_on_by_default(monkeypatch):
    monkeypatch.delenv("PROOFFLOW_MSM_BALANCED", raising=False)
    assert device_options(settings.current()).msm_balanced is True
    for raw, want in (("1", True), ("on", True), ("0", False), ("no", False)):
        monkeypatch.setenv("PROOFFLOW_MSM_BALANCED", raw)
        assert device_options(settings.current()).msm_balanced is want
    monkeypatch.setenv("PROOFFLOW_MSM_BALANCED", "spans")
    with pytest.raises(ValueError, match="PROOFFLOW_MSM_BALANCED must be 0 or 1"):
        settings.current()


@pytest.mark.parametrize("env, kernel", [(None, "msm_accumulate_spans_g1"), ("0", "msm_accumulate_g1"),
                                         ("1", "msm_accumulate_spans_g1")])
def test_msms_accumulate_as_the_environment_says(monkeypatch, env, kernel):
    if twin.compiler() is None:
        pytest.skip("no C++ compiler for the kernel twin")
    if env is None:
        monkeypatch.delenv("PROOFFLOW_MSM_BALANCED", raising=False)
    else:
        monkeypatch.setenv("PROOFFLOW_MSM_BALANCED", env)
    rng = np.random.default_rng(5)
    table = twin.edge_table("g1", 64, rng)
    s = fr.random(64, rng)
    spy = twin.LaunchSpy()
    balanced = device_options(settings.current()).msm_balanced  # as a GPU prover's caller passes it
    assert pippenger.msm(spy, "g1", twin.points(spy, table), s, balanced=balanced) == points.msm(table, s)
    assert kernel in spy.launched and {"msm_accumulate_g1", "msm_accumulate_spans_g1"} - {kernel} - set(spy.launched)
