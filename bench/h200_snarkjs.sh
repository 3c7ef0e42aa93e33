#!/usr/bin/env bash
# proofflow on the H200 against snarkjs on the H200 host's CPU, in one call of the GPU machine:
#   1. the GPU tests of snarkjs keys (tests/device/test_gpu_circom.py)
#   2. python3 -m bench.snarkjs --backend gpu: $OUT/snarkjs-h200.json (commit it as
#      bench/results/snarkjs-h200.json)
# The machine has no node and no package index: bring them in .snarkjs/ (git-ignored), made
# here by:   mkdir -p .snarkjs/whl && xz -c "$(command -v node)" > .snarkjs/node.xz
#            cp .whl/py_arkworks_bls12381-*.whl .snarkjs/whl/   (bash bench/gpu_wheels.sh fetches it)
#            tar -cJf .snarkjs/node_modules.tar.xz -C tests/circom --exclude=circom2 --exclude=circomlib \
#                --exclude=@wasmer --exclude=wasmcurves/test node_modules
# and run with .snarkjs carried:   device run: command "bash bench/h200_snarkjs.sh 16 18 20 22", carry [".snarkjs"]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT" /tmp/nodebin
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .snarkjs/whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
python3 - <<'PY' || exit 1
import lzma, os, shutil, tarfile
with lzma.open(".snarkjs/node.xz") as src, open("/tmp/nodebin/node", "wb") as dst:
    shutil.copyfileobj(src, dst)
os.chmod("/tmp/nodebin/node", 0o755)
with tarfile.open(".snarkjs/node_modules.tar.xz") as tf:
    tf.extractall("tests/circom", filter="tar")
PY
export PATH=/tmp/nodebin:$PATH
node --version && tests/circom/node_modules/.bin/snarkjs --version | head -1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
timeout -k 10 120 python3 -m pytest -q -p no:cacheprovider -m gpu tests/device/test_gpu_circom.py 2>&1 | tee "$OUT/pytest-circom.log"
SIZES=${*:-16 18 20 22}
python3 -m bench.snarkjs --backend gpu --sizes $SIZES --snarkjs-max "${SNARKJS_MAX:-20}" --repeats 5 \
    --out "$OUT/snarkjs-h200.json" 2>&1 | tee "$OUT/bench-snarkjs.log"
