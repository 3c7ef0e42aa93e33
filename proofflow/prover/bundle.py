"""A proof bundle: a directory holding a run's proofs, their public inputs and the
verifying key, self-contained so ``python -m proofflow.prover verify DIR`` needs nothing else.

    DIR/vk.json                 the verifying key
    DIR/partition-0000.proof    a compressed proof per partition (192 bytes on BLS12-381)
    DIR/manifest.json           curve, circuit, log2, and per partition its public inputs
                                (hex), proof file and the input it proved (a file relative
                                to its input root, "inline", or null for a built-in
                                circuit's); written last, so its presence means
                                the bundle is complete (a manifest naming no curve is the
                                default curve's, as written before curves were recorded)

A circom circuit's bundle also holds snarkjs's files, for `snarkjs groth16 verify`:
DIR/verification_key.json and, per partition, partition-0000.proof.json and
partition-0000.public.json; on a curve Ethereum verifies (BN254, snarkjs's bn128), also
partition-0000.calldata.txt, the proof's Solidity calldata for snarkjs's verifier contract
as `snarkjs zkey export soliditycalldata` prints it.

Verifying reads only regular files inside the bundle: a manifest path that is absolute, has
``..``, leads outside the bundle through a symlink, or names anything but a regular file
(a symlink, a device, a fifo, a directory) makes the bundle malformed, and is never opened.
"""
from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from proofflow.prover.groth16 import verifier
from proofflow import settings
from proofflow.prover import bounded_json, files
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


def snarkjs_names(partition: int) -> tuple[str, str]:
    """A circom circuit's partition as snarkjs's files: its proof.json and public.json."""
    return f"{proof_name(partition)}.json", f"partition-{partition:04d}.public.json"


def calldata_name(partition: int) -> str:
    """A partition's Solidity calldata (a proof on a curve Ethereum verifies)."""
    return f"partition-{partition:04d}.calldata.txt"


def write_proof(directory, partition: int, proof: Proof, snarkjs_public: list[int] | None = None) -> Path:
    """The proof's 192 bytes; with ``snarkjs_public`` (a circom circuit's public signals),
    also snarkjs's proof.json and public.json, and its Solidity calldata when Ethereum
    verifies proofs of its curve."""
    path = Path(directory) / proof_name(partition)
    if snarkjs_public is not None:
        from proofflow.prover.circom import calldata, snarkjs_json
        proof_json, public_json = snarkjs_names(partition)
        snarkjs_json.write_proof(path.with_name(proof_json), proof)
        snarkjs_json.write_public(path.with_name(public_json), snarkjs_public)
        if calldata.evm_verifiable(proof.curve):
            calldata.write_calldata(path.with_name(calldata_name(partition)), proof, snarkjs_public)
    files.write_bytes(path, proof.to_bytes())
    return path


def write_manifest(directory, circuit: str, log2: int, vk: VerifyingKey, entries: list[tuple[int, list[int]]],
                   snarkjs: bool = False, inputs: list[str | None] | None = None) -> Path:
    """``entries``: (partition, public inputs) for every proof already written; ``inputs``:
    the input each partition proved, by partition (a file relative to its input root, or
    "inline"; None: a built-in circuit's own)."""
    directory = Path(directory)
    vk.save(directory / "vk.json")
    if snarkjs:
        from proofflow.prover.circom import snarkjs_json
        snarkjs_json.write_verification_key(directory / "verification_key.json", vk)
    manifest = {"format": vk.curve.key_format, "curve": vk.curve.name, "circuit": circuit, "log2": log2,
                "partitions": [{"partition": p, "public_inputs": [hex(x) for x in public], "proof": proof_name(p),
                                "input": inputs[p] if inputs else None} for p, public in sorted(entries)]}
    path = directory / MANIFEST
    files.write_bytes(path, json.dumps(manifest, indent=1).encode())
    return path


def _inside(directory: Path, name, what: str) -> Path:
    """``name`` (a path the manifest gives) as a regular file inside the bundle, else
    BundleError naming ``what``; nothing but lstat touches it here."""
    if not isinstance(name, str) or not name:
        raise BundleError(f"bundle {directory}: {what} is not a file name")
    rel = PurePosixPath(name)
    if rel.is_absolute() or ".." in rel.parts:
        raise BundleError(f"bundle {directory}: {what} is {'an absolute path' if rel.is_absolute() else 'a path with ..'}"
                          "; a bundle's files lie inside it")
    path, root = directory / rel, os.path.realpath(directory)
    if os.path.commonpath([root, os.path.realpath(path)]) != root:
        raise BundleError(f"bundle {directory}: {what} leads outside the bundle")
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        raise BundleError(f"bundle {directory}: {what} is missing") from None
    except OSError as exc:
        raise BundleError(f"bundle {directory}: {what} is unreadable ({exc.strerror})") from None
    if not stat.S_ISREG(mode):
        raise BundleError(f"bundle {directory}: {what} is not a regular file")
    return path


def _read(path: Path, what: str, limit: int | None = None) -> bytes:
    """A file ``_inside`` checked, opened without following a symlink (nor waiting on a fifo)
    should it have been swapped since; at most ``limit`` bytes."""
    try:
        return files.read_regular(path, limit, follow_symlinks=False)
    except files.NotARegularFile:
        raise BundleError(f"{what} is not a regular file") from None
    except files.FileTooLarge:
        raise BundleError(f"{what} is larger than {limit} bytes") from None
    except OSError as exc:
        raise BundleError(f"{what} is unreadable ({exc.strerror})") from None


def _read_json(path: Path, what: str):
    return bounded_json.loads(_read(path, what, settings.current().json_max_bytes))


def read_manifest(directory) -> dict:
    directory = Path(directory)
    path = directory / MANIFEST
    if not os.path.lexists(path):
        raise BundleError(f"{path} not found: not a proof bundle (or an unfinished one)")
    try:
        manifest = _read_json(_inside(directory, MANIFEST, MANIFEST), str(path))
    except BundleError:
        raise
    except ValueError as exc:
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
    vk_path = _inside(directory, "vk.json", "vk.json")
    try:
        vk = VerifyingKey.from_json(_read_json(vk_path, str(vk_path)))
    except BundleError:
        raise
    except KeyFormatError as exc:
        raise BundleError(str(exc)) from exc
    except ValueError as exc:
        raise BundleError(f"cannot read verifying key {vk_path}: {exc}") from exc
    if vk.curve.name != curve.name:
        raise BundleError(f"{directory}: vk.json is over {vk.curve.name}, the manifest over {curve.name}")
    results = []
    for i, entry in enumerate(manifest["partitions"]):
        try:
            partition = int(entry["partition"])
            inputs = [int(x, 16) for x in entry["public_inputs"]]
            name = entry["proof"]
        except (KeyError, TypeError, ValueError) as exc:
            raise BundleError(f"manifest entry {i} is unusable: {exc}") from exc
        what = f"manifest entry {i} is unusable: its proof"
        data = _read(_inside(directory, name, what), what, curve.proof_bytes)
        try:
            proof = Proof.from_bytes(curve, data)
        except KeyFormatError as exc:
            raise BundleError(f"{what}: {exc}") from exc
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
