"""A proof bundle: a directory holding a run's proofs, their public inputs and the
verifying key, self-contained so ``python -m proofflow.prover verify DIR`` needs nothing else.

    DIR/vk.json                 the verifying key
    DIR/partition-0000.proof    a compressed proof per partition (192 bytes on BLS12-381)
    DIR/manifest.json           curve, circuit, log2, and per partition its public inputs
                                (hex) and proof file; written last, so its presence means
                                the bundle is complete (a manifest naming no curve is the
                                default curve's, as written before curves were recorded)

A circom circuit's bundle also holds snarkjs's files, for `snarkjs groth16 verify`:
DIR/verification_key.json and, per partition, partition-0000.proof.json and
partition-0000.public.json.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from proofflow.prover.groth16 import verifier
from proofflow.prover import files
from proofflow.prover.groth16.data_structures import KeyFormatError, Proof, VerifyingKey, file_curve

MANIFEST = "manifest.json"


class BundleError(ValueError):
    """The bundle cannot be read: missing, truncated or malformed files."""


@dataclass
class PartitionResult:
    partition: int
    ok: bool
    reason: str = ""


def proof_name(partition: int) -> str:
    return f"partition-{partition:04d}.proof"


def write_proof(directory, partition: int, proof: Proof, snarkjs_public: list[int] | None = None) -> Path:
    """The proof's 192 bytes; with ``snarkjs_public`` (a circom circuit's public signals),
    also snarkjs's proof.json and public.json."""
    path = Path(directory) / proof_name(partition)
    if snarkjs_public is not None:
        from proofflow.prover.circom import snarkjs_json
        snarkjs_json.write_proof(path.with_name(path.name + ".json"), proof)
        snarkjs_json.write_public(path.with_name(f"partition-{partition:04d}.public.json"), snarkjs_public)
    files.write_bytes(path, proof.to_bytes())
    return path


def write_manifest(directory, circuit: str, log2: int, vk: VerifyingKey, entries: list[tuple[int, list[int]]],
                   snarkjs: bool = False) -> Path:
    """``entries``: (partition, public inputs) for every proof already written."""
    directory = Path(directory)
    vk.save(directory / "vk.json")
    if snarkjs:
        from proofflow.prover.circom import snarkjs_json
        snarkjs_json.write_verification_key(directory / "verification_key.json", vk)
    manifest = {"format": vk.curve.key_format, "curve": vk.curve.name, "circuit": circuit, "log2": log2,
                "partitions": [{"partition": p, "public_inputs": [hex(x) for x in inputs], "proof": proof_name(p)}
                               for p, inputs in sorted(entries)]}
    path = directory / MANIFEST
    files.write_bytes(path, json.dumps(manifest, indent=1).encode())
    return path


def read_manifest(directory) -> dict:
    path = Path(directory) / MANIFEST
    try:
        manifest = json.loads(path.read_text())
    except FileNotFoundError as exc:
        raise BundleError(f"{path} not found: not a proof bundle (or an unfinished one)") from exc
    except (OSError, ValueError) as exc:
        raise BundleError(f"{path} is not readable JSON: {exc}") from exc
    try:
        curve = file_curve(manifest if isinstance(manifest, dict) else {}, "proof manifest")
    except KeyFormatError as exc:
        raise BundleError(f"{path} is {exc}") from None
    if not isinstance(manifest.get("partitions"), list):
        raise BundleError(f"{path} is not a {curve.key_format} proof manifest")
    return manifest


def verify_bundle(directory) -> list[PartitionResult]:
    """Verify every proof. Raises BundleError when the bundle itself is unreadable; a proof
    that is readable but wrong (bad points, failed pairing) is a failed PartitionResult."""
    directory = Path(directory)
    manifest = read_manifest(directory)
    curve = file_curve(manifest, "proof manifest")
    try:
        vk = VerifyingKey.load(directory / "vk.json")
    except KeyFormatError as exc:
        raise BundleError(str(exc)) from exc
    if vk.curve.name != curve.name:
        raise BundleError(f"{directory}: vk.json is over {vk.curve.name}, the manifest over {curve.name}")
    results = []
    for entry in manifest["partitions"]:
        try:
            partition = int(entry["partition"])
            inputs = [int(x, 16) for x in entry["public_inputs"]]
            data = (directory / entry["proof"]).read_bytes()
        except (KeyError, TypeError, ValueError, OSError) as exc:
            raise BundleError(f"manifest entry {entry!r} is unusable: {exc}") from exc
        try:
            proof = Proof.from_bytes(curve, data)
        except KeyFormatError as exc:
            raise BundleError(f"{entry['proof']}: {exc}") from exc
        except ValueError as exc:
            results.append(PartitionResult(partition, False, str(exc)))
            continue
        try:
            ok = verifier.verify(vk, inputs, proof)
        except ValueError as exc:
            results.append(PartitionResult(partition, False, str(exc)))
            continue
        results.append(PartitionResult(partition, ok, "" if ok else "pairing check failed"))
    return results
