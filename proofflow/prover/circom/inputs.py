"""A run's inputs checked against its registered circuit before any work (``validate``): an
input.json or input object parsed within bounded_json's bounds, its integers in the field,
its signals and their sizes those the circuit's witness generator takes; a .wtns's header,
prime and count of values those of the circuit. What only running the circuit shows (an
assert that fails) is synthesis's to find."""
from __future__ import annotations

from pathlib import Path

from proofflow import settings, spec
from proofflow.prover.circom import registry
from proofflow.prover.circom.errors import CircomFileError, InputRejected
from proofflow.prover.circom.wtns import read_header
from proofflow.prover.curves import registry as curves


def check_run_inputs(config: spec.RunConfig) -> None:
    """Raises spec.InvalidInput naming every input the circuit refuses (the first one's
    partition and path in its fields); a built-in circuit's run has nothing to check."""
    if not config.circom or not config.inputs:
        return
    info = registry.get(config.circuit)
    curve = curves.get_curve(info.get("curve", curves.DEFAULT))
    refused = dict(_refused_witnesses(config.inputs, curve, int(info["signals"])))
    generated = [(i, x) for i, x in enumerate(config.inputs) if not _is_wtns(x)]
    if generated and info.get("wasm"):
        from proofflow.prover.circom.witness import check_inputs
        wasm = registry.circuit_dir(config.circuit) / "circuit.wasm"
        for j, exc in check_inputs(wasm, [x for _, x in generated], curve, f"circuit {config.circuit!r}"):
            refused[generated[j][0]] = exc
    if refused:
        roots = settings.current().run_input_roots
        first = min(refused)
        problems = "; ".join(f"input {i} ({spec.input_label(config.inputs[i], roots)}): {_detail(refused[i])}"
                             for i in sorted(refused))
        raise spec.InvalidInput(f"the circuit {config.circuit!r} refuses {len(refused)} of the {len(config.inputs)} "
                                f"inputs: {problems}", first, config.inputs[first])


def _is_wtns(item) -> bool:
    return isinstance(item, str) and Path(item).suffix == ".wtns"


def _refused_witnesses(inputs, curve, signals: int):
    for i, item in enumerate(inputs):
        if not _is_wtns(item):
            continue
        try:
            _f, count = read_header(item, curve)
        except CircomFileError as exc:
            yield i, exc
            continue
        if count != signals:
            yield i, InputRejected(item, f"a witness of {count} values, the circuit has {signals} signals")


def _detail(exc: ValueError) -> str:
    return getattr(exc, "detail", None) or str(exc)
