"""A proving key's upload to the device (issue #38 item 1): compressed tables (half the bytes
up, decompressed and checked there, ``device/decompress.py``) against the same key's xy tables
(uploaded as they are, made Montgomery there).

    python -m bench.key_upload --key DIR [--key DIR ...] --out FILE [--repeats 3]

Each key (made by ``python -m proofflow.prover setup``, its tables compressed or xy as
PROOFFLOW_KEY_TABLES said) is loaded memory-mapped (its digests not read again) and made
resident as a prover does (``Backend.prepare``, plain MSM plans) ``--repeats`` times, each
upload timed (wall seconds, the device synchronized), table by table, after one warm-up
upload (the kernels' first load; the key's pages read into the page cache when it is on a
disk); its tables dropped and CuPy's pools emptied between uploads. For a compressed key
also the decompression kernels' device time alone (``decompress_ms``, CUDA events, one
more upload). Per key: each table's encoding, the files' bytes, the resident bytes, and the
upload's rate in file bytes a second. Progress on stderr, the JSON to --out after each key.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from bench import _env


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def upload_once(pk, options) -> dict:
    """One upload of every table (as ``GpuBackend.prepare`` does it), seconds per table."""
    import cupy as cp
    from proofflow.prover.device import msm as gpu_msm
    from proofflow.prover.groth16.data_structures import PK_TABLES
    tables = {}
    for name in PK_TABLES:
        t0 = time.perf_counter()
        gpu_msm.device_points(getattr(pk, name), options)
        cp.cuda.get_current_stream().synchronize()
        tables[name] = round(time.perf_counter() - t0, 4)
    return {"total_s": round(sum(tables.values()), 4), "tables_s": tables}


def drop(pk) -> None:
    from proofflow.prover import device
    from proofflow.prover.groth16.data_structures import PK_TABLES
    for name in PK_TABLES:
        getattr(pk, name).device_cache.clear()
    device.free_pools()


def kernel_ms(pk, options) -> dict:
    """The decompression kernels' device milliseconds, table by table (compressed tables)."""
    from proofflow.prover.device import decompress
    from proofflow.prover.groth16.data_structures import PK_TABLES
    out = {}
    for name in PK_TABLES:
        table = getattr(pk, name)
        if table.compressed is not None:
            spans: dict = {}
            decompress.upload(table, options, spans=spans)
            out[name] = round(spans["decompress_ms"], 2)
    return out


def bench_key(directory: Path, repeats: int, options) -> dict:
    from proofflow.prover.groth16.data_structures import PK_TABLES, ProvingKey
    from proofflow.prover.keys import key_bytes
    pk = ProvingKey.load(directory, verify_digests=False)
    file_bytes = sum((directory / f"{name}.npy").stat().st_size for name in PK_TABLES)
    row = {"key": str(directory), "circuit": pk.circuit, "log2": pk.log2,
           "encodings": {name: getattr(pk, name).encoding for name in PK_TABLES},
           "file_bytes": file_bytes, "resident_bytes": key_bytes(pk)}
    _say(f"{directory}: 2^{pk.log2}, {file_bytes / 1e9:.2f} GB of tables, {set(row['encodings'].values())}")
    warm = upload_once(pk, options)
    drop(pk)
    row["warmup"] = warm
    runs = []
    for _ in range(repeats):
        runs.append(upload_once(pk, options))
        drop(pk)
        _say(f"  upload {runs[-1]['total_s']:.2f} s")
    row["uploads"] = runs
    totals = [r["total_s"] for r in runs]
    row["upload_s"] = {"min": min(totals), "median": statistics.median(totals)}
    row["file_gb_per_s"] = round(file_bytes / 1e9 / statistics.median(totals), 2)
    if any(e == "compressed" for e in row["encodings"].values()):
        row["decompress_ms"] = kernel_ms(pk, options)
        drop(pk)
        _say(f"  decompression kernels {sum(row['decompress_ms'].values()) / 1e3:.2f} s of device time")
    return row


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.key_upload", description=__doc__.split("\n\n")[0])
    p.add_argument("--key", action="append", required=True, type=Path, help="a key directory (repeatable)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--out", required=True, type=Path)
    args = p.parse_args(argv)
    from proofflow import settings
    from proofflow.prover import device
    from proofflow.prover.backend.by_name import device_options
    if not device.available():
        _say("error: no GPU visible (bench.key_upload times uploads to the device)")
        return 2
    result = {"environment": _env.environment(), "repeats": args.repeats, "keys": []}
    options = device_options(settings.current())
    for d in args.key:
        result["keys"].append(bench_key(d, args.repeats, options))
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    _say(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
