#!/usr/bin/env bash
# Compile the H200's kernels here, ahead of a device session, into .kernels.tar.xz (git-ignored,
# ~6 MB for ~30 MB of cubins: the carry limit is 64 MiB with .whl/), to be carried beside .whl/: every module proofflow loads and those the benchmarks and tests compare
# in each product variant (`proofflow kernels build --variants`), for sm_90 with NVRTC 13.0, the
# image's (cupy-cuda13x): its cubins are named by source, options, arch and NVRTC version, so
# the device loads them instead of compiling for minutes of its 30. A throwaway venv holds
# CuPy and NVRTC (no GPU needed); the scripts that run on the device unpack it when carried.
#   usage: bash bench/gpu_kernels.sh     (needs PyPI the first time; ~8 min on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${KERNEL_VENV:-/tmp/proofflow-nvrtc13}
if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q cupy-cuda13x==14.2.0 "nvidia-cuda-nvrtc==13.0.*" py-arkworks-bls12381==0.5.0
fi
# proofflow's own dependencies from the project's venv, CuPy and NVRTC from the throwaway one
site=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
dir=${KERNEL_BUILD_DIR:-$PWD/.kernels}  # kept between runs: only edited modules compile again
# listed: only the cubins this source loads (an edited module leaves its old cubin behind)
PYTHONPATH=$PWD:$site PROOFFLOW_KERNEL_DIR=$dir \
    "$VENV/bin/python" -m proofflow.cli kernels build --arch 90 --variants mul32 mul64 wide call
PYTHONPATH=$PWD:$site PROOFFLOW_KERNEL_DIR=$dir "$VENV/bin/python" - <<'PY' > "$dir.list"
from proofflow.prover.device import cache
for e in cache.entries():
    if e["status"] == "current":
        print(e["path"].rsplit("/", 1)[1])
        print(e["path"].rsplit("/", 1)[1].removesuffix(".cubin") + ".json")
PY
sort -u -o "$dir.list" "$dir.list"
tar cJf .kernels.tar.xz -C "$dir" -T "$dir.list"
ls -l .kernels.tar.xz
