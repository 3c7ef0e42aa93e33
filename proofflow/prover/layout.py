"""Where a proofflow home keeps each run's files (the roots come from ``proofflow.settings``):

    params/[<curve>-]<circuit>-log2_<k>-seed<s>/
                                           a built-in circuit's proving key, shared by its runs
                                           (named by its curve but for the default one's)
    circuits/<name>/key/                   a registered circuit's proving key (circom.registry)
    scratch/<dag>/<run>/p0000/             a partition's intermediate files, removed with the run
    bundles/<dag>/<run>/                   the run's proofs, manifest and verifying key
    reports/<dag>/<run>/                   check_h2d's result and data docs

Dag and run ids become directory names through ``files.safe_name`` (no traversal, no
collisions)."""
from __future__ import annotations

from pathlib import Path

from proofflow import settings, spec
from proofflow.prover.curves import registry
from proofflow.prover.files import safe_name


def params_dir(circuit: str, log2: int, seed: int, curve: str = registry.DEFAULT) -> Path:
    """The proving key of a run's circuit: a built-in family's, generated per seed and curve,
    or the one a registered circuit came with."""
    if circuit not in spec.CIRCUITS:
        return settings.current().circuits_dir / circuit / "key"
    tag = registry.path_tag(registry.get_curve(curve))
    return settings.current().params_cache / f"{tag}{circuit}-log2_{log2}-seed{seed}"


def run_dir(dag_id: str, run_id: str, root: Path | None = None) -> Path:
    return Path(root or settings.current().scratch_root) / safe_name(dag_id) / safe_name(run_id)


def partition_dir(dag_id: str, run_id: str, partition: int, root: Path | None = None) -> Path:
    return run_dir(dag_id, run_id, root) / f"p{partition:04d}"


def run_owner(dag_id: str, run_id: str) -> str:
    """The prefix of every lease of a run's partitions in the shared staging
    (``release_owned`` at its cleanup)."""
    return f"{safe_name(dag_id)}/{safe_name(run_id)}/"


def owner(dag_id: str, run_id: str, partition: int) -> str:
    """Who holds a partition's shared segment (one lease per partition of a run)."""
    return f"{run_owner(dag_id, run_id)}p{partition:04d}"


def bundle_dir(dag_id: str, run_id: str) -> Path:
    return settings.current().bundles_root / safe_name(dag_id) / safe_name(run_id)


def report_dir(dag_id: str, run_id: str) -> Path:
    return settings.current().reports_root / safe_name(dag_id) / safe_name(run_id)
