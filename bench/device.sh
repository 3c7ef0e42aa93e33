#!/usr/bin/env bash
# The GPU machine's runbooks, one runner: bash bench/device.sh PLAN [ARGS]
#
# A device call runs one command for at most 600 s, from the repository root, with no package
# index and only the git-ignored paths it carries. So prepare here first (needs PyPI):
#   bash bench/device.sh wheels         .whl/: Airflow, Great Expectations, arkworks, zksnake, ... (carry it)
#   bash bench/device.sh kernels        .kernels.tar.xz: every cubin for sm_90, NVRTC 13.0 (optional; with
#                                       KERNELS_CARRY=default only the default variant's: beside .whl)
#   bash bench/device.sh snarkjs-pack   .snarkjs/: node, circom2, snarkjs, circomlib, arkworks, wasmtime
#                                       (for `snarkjs`, `circom-family` and `circom-prep`)
# Device plans (carry .whl and .kernels.tar.xz unless noted; results and logs go to $OUT):
#   session                      GPU tests, bench.gpu, an Nsight Compute profile (STEPS, TESTS, BENCH_ONLY)
#   partition [LOG2 ...]         bench.partition at 2^22 and 2^24: plain, precomputed copies, MSMs overlapped (VARIANTS)
#   key-upload [LOG2 ...]        bench.key_upload at 2^24: a key's upload, compressed tables against xy, and the GPU
#                                decompression's tests against the CPU (2^27: the 2p27 plan's upload mode)
#   stream LOG2 [DUR_S] [WARM_S] bench.stream: sustained load through Airflow (also carry proofflow.egg-info)
#   stream-key LOG2              the stream's key alone, for a stream at 2^26 or 2^27 in the call that follows
#   circom-prep [SIZES ...]      a circom chain at each 2^SIZE compiled, its test zkey, registered with 64
#                                inputs for stream-circom (carry .snarkjs, and .kernels.tar.xz if made; resumes;
#                                CURVE=bn254: compiled for bn128, as FAMILY-bn254-2pSIZE)
#   stream-circom LOG2 [DUR_S] [WARM_S]  bench.stream of circom-prep's circuit, witnesses from input.json, a
#                                sample verified by snarkjs (the call after circom-prep, on the warm machine;
#                                carry as for stream)
#   msm-sweep                    bench.msm_phases over the plans the MSM cost model is fitted to
#   pipeline [LOG2] [PARTS] [DEPTH]     bench.pipeline: naive vs the prover service, pinned vs pageable
#   pipeline-x2 [LOG2] [PARTS] [DEPTH]  bench.scaling on two GPUs (kind nvidia-h200-x2)
#   2p26 setup|run               a 2^26 proof_run through Airflow, pinned vs pageable (two calls)
#   2p27 MODE CIRCUIT ...        2^27 partitions with the key resident (several calls; modes cs setup run clean)
#   snarkjs [SIZES ...]          bench.snarkjs on the GPU against snarkjs on the host, CURVE bls12_381|bn254 (carry .snarkjs only)
#   circom-family [SIZES ...]    bench.circom_family: circomlib circuits on the GPU against snarkjs on the host
#                                (carry .snarkjs, and .kernels.tar.xz if made; resumes in a call that follows)
#   dropin [SIZES ...]           bench.dropin: `proofflow groth16 prove` in process against the warm service
#   circom-partition [SIZES ...] bench.circom_partition: a circom partition's device phase against MiMC's
#                                (resumes in a call that follows; CURVE=bn254: both over BN254)
#   bn254 [SIZES ...]            BN254 in one call (issue #37): its GPU tests, bench.gpu --curve bn254 (NTT, G1/G2
#                                MSMs at 2^20-2^24), bench.partition --curve bn254 at 2^22 and 2^24
#   staging                      kernel build, service start, staging GPU tests, bench.staging
# bench/README.md says what each measures and where its current figures are.
# Each plan keeps its work within CALL_S seconds (default 570: a call's 600 less the transfers).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/out}
export PYTHONUNBUFFERED=1
T0=$SECONDS
since() { echo $((SECONDS - T0)); }
left() { local s=$(( ${CALL_S:-570} - (SECONDS - T0) )); echo $((s > 1 ? s : 1)); }
# the plans' proving keys made by the GPU setup, kept for the calls that follow on a warm machine
KEYS=/dev/shm/pf-params
# circom-prep's toolchain, site and prepared circuits, for stream-circom in the calls that follow
CIRCOM_ROOT=${CIRCOM_ROOT:-/root/pf-circom}
# CURVE, for the plans that take one: proofflow's name or snarkjs's (bls12_381 | bls12381, bn254 | bn128)
case ${CURVE:-bls12_381} in
    bls12_381 | bls12381) CURVE=bls12_381 SNARKJS_CURVE=bls12381 ;;
    bn254 | bn128) CURVE=bn254 SNARKJS_CURVE=bn128 ;;
    *) echo "CURVE=$CURVE: bls12_381 or bn254 (snarkjs's names: bls12381, bn128)" >&2; exit 2 ;;
esac

# -- shared steps ------------------------------------------------------------------------------

# use_wheels DIR SITE: the carried wheels installed into SITE (--no-compile: the image writes no
# bytecode, see bytecode_start), once a machine unless the set of wheels changed, and put on the paths
use_wheels() {
    local dir=$1 site=$2 stamp
    ls "$dir"/*.whl > /dev/null 2>&1 || { echo "no wheels in $dir/ (see this script's header)"; exit 1; }
    stamp=$(cd "$dir" && ls -- *.whl | sort | md5sum | cut -d' ' -f1)
    if [ "$(cat "$site/.wheels" 2> /dev/null)" != "$stamp" ]; then
        python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" \
            "$dir"/*.whl || { echo "installing the carried wheels failed"; exit 1; }
        mkdir -p "$site" && echo "$stamp" > "$site/.wheels"
    fi
    export PYTHONPATH=$site:$PWD PATH=$site/bin:$PATH
}

# unpack_kernels: the carried cubins into the kernel directory of this script's processes
# (PROOFFLOW_KERNEL_DIR, if set) and into the default one, which an Airflow deployment's prover
# services use (a deployment inherits no PROOFFLOW_* setting): nothing compiles on the device
unpack_kernels() {
    [ -f .kernels.tar.xz ] || return 0
    local dir
    for dir in "${PROOFFLOW_KERNEL_DIR:-}" "${XDG_CACHE_HOME:-$HOME/.cache}/proofflow/kernels"; do
        if [ -n "$dir" ]; then mkdir -p "$dir" && tar xJf .kernels.tar.xz -C "$dir"; fi
    done
    echo "prebuilt kernels: $(tar tJf .kernels.tar.xz | grep -c '\.cubin$') cubins unpacked"
}

# bytecode_start SITE / bytecode_wait: where the host writes no bytecode (PYTHONDONTWRITEBYTECODE),
# every Airflow task process would compile Airflow's lazily imported modules again (1.6x the host
# CPU a partition, bench/results/archive/host-cpu-cpu-before-preload.json); compiled once instead,
# in the background
BYTECODE=
bytecode_start() {
    if [ -n "${PYTHONDONTWRITEBYTECODE:-}" ]; then
        python3 -m compileall -q -j 0 "$1" > "$OUT/compileall.log" 2>&1 &
        BYTECODE=$!
    fi
}
bytecode_wait() {
    [ -n "$BYTECODE" ] || return 0
    if wait "$BYTECODE"; then echo "bytecode compiled"; else echo "compileall failed (see compileall.log)"; fi
}

device_info() { nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader \
    | tee "$OUT/device.txt"; }
card_label() {  # h200, or h100 when the call got one: the results' names say which card ran them
    case $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) in *H100*) echo h100 ;; *) echo h200 ;; esac
}

# resumable JSON LOG COMMAND...: a step that a call that follows resumes, run for the call's time
# left, its output appended to LOG; JSON and LOG copied to $OUT; it says whether it completed
resumable() {
    local json=$1 log=$2 rc
    shift 2
    timeout -k 10 "$(left)" "$@" 2>&1 | tee -a "$log"
    rc=${PIPESTATUS[0]}
    cp "$json" "$log" "$OUT"/ 2> /dev/null
    df -h /root | tail -1
    if [ "$rc" = 0 ]; then echo "complete at $(since) s"; else echo "stopped at $(since) s (rc $rc): call again to resume"; fi
    return "$rc"
}

# timed NAME BUDGET LOG COMMAND...: COMMAND under a time budget, logged to $OUT/LOG; its exit status
# and seconds in RC[NAME] and SECS[NAME] (124: out of time). Each step runs whatever the one before did.
declare -A RC SECS
timed() {
    local name=$1 budget=$2 log=$3 t=$SECONDS
    shift 3
    echo "=== $name (budget $budget s)"
    timeout -k 10 "$budget" "$@" 2>&1 | tee "$OUT/$log"
    RC[$name]=${PIPESTATUS[0]}
    SECS[$name]=$((SECONDS - t))
}

# ensure_key CIRCUIT LOG2 DIR: a proving key made by the GPU setup unless DIR holds one
ensure_key() {
    if [ -f "$3/params.json" ]; then echo "2^$2 key found in $3"; return 0; fi
    timeout -k 5 "$(left)" python3 -m proofflow.prover setup --circuit "$1" --log2 "$2" --seed 0 --backend gpu \
        --out "$3" > "$OUT/setup-2p$2.log" 2>&1 || { tail -20 "$OUT/setup-2p$2.log"; return 1; }
    echo "2^$2 key ready at $(since) s"
}

# -- preparation, here (PyPI) ------------------------------------------------------------------

# == plan: wheels
# .whl/: what the GPU image (Python 3.12) lacks, with its needs; the image's own packages (KINDS.md
# lists them) left out to stay under the call's 64 MiB carry limit. About 50 MB, a minute.
plan_wheels() {
    set -e
    local py=${PY:-python3} w name
    WHEELS_TMP=$(mktemp -d)
    trap 'rm -rf "$WHEELS_TMP"' EXIT
    "$py" -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d "$WHEELS_TMP" \
        apache-airflow-core==3.3.2 apache-airflow-task-sdk==1.3.2 apache-airflow-providers-standard==1.21.0 \
        great-expectations==1.24.1 sqlalchemy==2.1.9 alembic==1.20.1 py-arkworks-bls12381==0.5.0 zksnake==0.1.0 \
        psycopg2-binary==2.9.13 asyncpg==0.32.0 pgserver==0.1.4  # pgserver: Postgres for the stream's metadata
    # the image's packages, normalized (lower case, '-' for '_' and '.'); babel (11 MB) is only for the
    # task SDK's locale date macros, which no proofflow task uses
    local on_image=" absl-py accelerate aiofiles aiohappyeyeballs aiohttp aiosignal annotated-doc anyio attrs
     certifi charset-normalizer click cloudpickle colorama contourpy cycler filelock fonttools frozenlist
     fsspec grpcio h11 httpcore httpx idna iniconfig jinja2 kiwisolver markdown markdown-it-py markupsafe
     matplotlib mdurl msgpack multidict narwhals networkx numpy packaging pandas pathspec pillow pip
     pluggy prometheus-client propcache protobuf psutil pyarrow pygments pyparsing pytest
     python-dateutil pyyaml regex requests rich scipy setuptools shellingham simplejson six
     sortedcontainers tabulate toolz tqdm typer typing-extensions typing-inspect urllib3 uvloop
     werkzeug wheel wrapt xxhash yarl zipp mypy-extensions babel "
    on_image=" $(echo $on_image) "  # one space between names: a name at a line's end matches too
    rm -rf .whl && mkdir -p .whl
    for w in "$WHEELS_TMP"/*.whl; do
        name=$(basename "$w" | cut -d- -f1 | tr 'A-Z_.' 'a-z--')
        case "$on_image" in *" $name "*) ;; *) cp "$w" .whl/ ;; esac
    done
    # pgserver's Postgres without its headers and client tools: the carry limit is near
    "$py" - .whl/pgserver-*.whl <<'EOF'
import os, sys, zipfile
keep_bin = {"postgres", "initdb", "pg_ctl", "psql", "pg_isready"}
src = sys.argv[1]
with zipfile.ZipFile(src) as zin, zipfile.ZipFile(src + ".tmp", "w", zipfile.ZIP_DEFLATED) as zout:
    for item in zin.infolist():
        parts = item.filename.split("/")
        if parts[:3] == ["pgserver", "pginstall", "include"]:
            continue
        if parts[:3] == ["pgserver", "pginstall", "bin"] and parts[-1] not in keep_bin:
            continue
        zout.writestr(item, zin.read(item))
os.replace(src + ".tmp", src)
EOF
    echo "$(ls .whl | wc -l) wheels, $(du -sm .whl | cut -f1) MiB in .whl/"
}

# == plan: kernels
# .kernels.tar.xz (~6 MB for ~30 MB of cubins): every module proofflow loads and those the
# benchmarks and tests compare, in each product variant, for sm_90 with the image's NVRTC 13.0.
# Cubins are named by source, options, arch and NVRTC version, so the device loads them instead
# of compiling for minutes. A throwaway venv holds CuPy and NVRTC (no GPU needed); ~8 min on 2 cores.
plan_kernels() {
    set -e
    local venv=${KERNEL_VENV:-/tmp/proofflow-nvrtc13} site
    local dir=${KERNEL_BUILD_DIR:-$PWD/.kernels}  # kept between runs: only edited modules compile again
    if [ ! -x "$venv/bin/python" ]; then
        python3 -m venv "$venv"
        "$venv/bin/pip" install -q cupy-cuda13x==14.2.0 "nvidia-cuda-nvrtc==13.0.*" py-arkworks-bls12381==0.5.0
    fi
    # proofflow's dependencies from the project's venv, CuPy and NVRTC from the throwaway one
    site=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    PYTHONPATH=$PWD:$site PROOFFLOW_KERNEL_DIR=$dir \
        "$venv/bin/python" -m proofflow.cli kernels build --arch 90 --variants mul32 mul64 wide call
    # only the cubins this source loads (an edited module leaves its old cubin behind); with
    # KERNELS_CARRY=default, of the curve modules only those in each group's default variant (every
    # field and NTT module): 0.7 MB instead of 8, so a call carrying .whl stays under 64 MiB
    PYTHONPATH=$PWD:$site PROOFFLOW_KERNEL_DIR=$dir KERNELS_CARRY=${KERNELS_CARRY:-all} "$venv/bin/python" - <<'PY' \
        > "$dir.list"
import os
from pathlib import Path
from proofflow.prover.device import cache
defaults = {m.label for m in cache.MODULES}
for e in cache.entries(Path(os.environ["PROOFFLOW_KERNEL_DIR"])):
    curve_module = e.get("module", "").split("-")[0] in ("msm", "fixed_base", "bitsum", "decompress")
    if os.environ["KERNELS_CARRY"] == "default" and curve_module and e.get("module") not in defaults:
        continue
    if e["status"] == "current":
        print(e["path"].rsplit("/", 1)[1])
        print(e["path"].rsplit("/", 1)[1].removesuffix(".cubin") + ".json")
PY
    sort -u -o "$dir.list" "$dir.list"
    tar cJf .kernels.tar.xz -C "$dir" -T "$dir.list"
    ls -l .kernels.tar.xz
}

# == plan: snarkjs-pack
# .snarkjs/ (~40 MB): node, the circom toolchain of tests/circom (npm ci there first: circom2,
# snarkjs, circomlib), arkworks's (BLS12-381's, and BN254's pairing: zksnake) and SQLAlchemy's wheels (from
# .whl/) and wasmtime's (proofflow's witnesses from a circuit's .wasm), for the snarkjs and circom-family plans
plan_snarkjs_pack() {
    set -e
    ls .whl/py_arkworks_bls12381-*.whl > /dev/null || { echo "run the wheels plan first"; exit 1; }
    rm -rf .snarkjs && mkdir -p .snarkjs/whl
    xz -T0 -c "$(command -v node)" > .snarkjs/node.xz
    # SQLAlchemy too: the proofflow CLI (setup, circuit add) builds its parser with the timing store's
    cp .whl/py_arkworks_bls12381-*.whl .whl/zksnake-*.whl .whl/joblib-*.whl .whl/sqlalchemy-*.whl .whl/greenlet-*.whl \
        .snarkjs/whl/
    "${PY:-python3}" -m pip download -q --only-binary=:all: --no-deps --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
        --platform manylinux1_x86_64 -d .snarkjs/whl "wasmtime==$(sed -n 's/.*"wasmtime==\([^"]*\)".*/\1/p' pyproject.toml)"
    tar -cJf .snarkjs/node_modules.tar.xz -C tests/circom --exclude=wasmcurves/test node_modules
    # what circom's C++ witness generators build with besides g++ and make (circom-prep WITNESS=cpp):
    # Debian's packages, unpacked there (~2 MB)
    mkdir -p .snarkjs/cpp
    (cd .snarkjs/cpp && apt-get download -q nasm libgmp-dev libgmp10 libgmpxx4ldbl nlohmann-json3-dev > /dev/null)
    du -sh .snarkjs
}

# -- device plans ------------------------------------------------------------------------------

# == plan: session
# 1. every GPU test (pytest -m gpu; the operator ones when Airflow, SQLAlchemy and GX import),
# 2. python3 -m bench.gpu -> $OUT/gpu-h200.json, 3. Nsight Compute on the G1 accumulation at 2^22.
# STEPS picks them ("tests bench ncu"), e.g. STEPS=bench BUDGET_BENCH=540 for a call of benchmark
# sections alone; TESTS (pytest ids) and BENCH_ONLY (bench.gpu sections) narrow them; NCU_ARGS (e.g.
# "--variant call --balanced") picks the profiled MSM's kernels. Budgets: BUDGET_TESTS 280,
# BUDGET_BENCH 220, BUDGET_NCU 50 s. Fails unless the tests and the benchmark that ran passed.
plan_session() {
    if ls .whl/*.whl > /dev/null 2>&1; then use_wheels .whl /tmp/site; else export PYTHONPATH=$PWD; fi
    python3 -c "import py_arkworks_bls12381, cupy" || { echo "py-arkworks-bls12381 or cupy missing: carry .whl"; exit 1; }
    unpack_kernels
    device_info
    local tests=${TESTS:-"tests/device/test_gpu_backend.py tests/device/test_gpu_g2.py tests/device/test_gpu_sparse.py
        tests/device/test_gpu_msm_precompute.py tests/device/test_gpu_msm_affine.py tests/device/test_gpu_overlap.py
        tests/device/test_gpu_wide.py tests/device/test_gpu_msm_balanced.py tests/device/test_gpu_density.py
        tests/device/test_kernel_twin.py tests/device/test_affine_twin.py
        tests/device/test_gpu_kernel_cache.py::test_after_warm_up_a_first_proof_compiles_nothing"}
    if python3 -c "import sqlalchemy, alembic, great_expectations, airflow.sdk" 2> /dev/null; then
        tests="$tests tests/timing/test_calibrate.py tests/device/test_check_h2d_gpu.py tests/device/test_gpu_service.py"
    else
        echo "note: airflow/sqlalchemy/alembic/great-expectations not importable: the operator GPU tests are left out"
    fi
    local steps=" ${STEPS:-tests bench ncu} " s
    # every test, not -x: one call should tell every failure
    # shellcheck disable=SC2086
    [[ $steps == *" tests "* ]] && timed tests "${BUDGET_TESTS:-280}" pytest.log \
        python3 -m pytest -m gpu -q -rfEs --durations=12 -p no:cacheprovider $tests
    # written after each section, so a cut-short run keeps what it did
    # shellcheck disable=SC2086
    [[ $steps == *" bench "* ]] && timed bench "${BUDGET_BENCH:-220}" bench.log \
        python3 -m bench.gpu --out "$OUT/gpu-h200.json" ${BENCH_ONLY:+--only $BENCH_ONLY}
    # shellcheck disable=SC2086
    [[ $steps == *" ncu "* ]] && timed ncu "${BUDGET_NCU:-50}" ncu-msm-accumulate-g1-2p22.txt \
        ncu --clock-control none --kernel-name regex:msm_accumulate --launch-count 1 \
            --section SpeedOfLight --section ComputeWorkloadAnalysis --section InstructionStats \
            --section Occupancy --section LaunchStats --section SchedulerStats --section WarpStateStats \
            python3 -m bench.msm_phases --group g1 --log2 22 --c 16 ${NCU_ARGS:-}
    echo
    echo "=== summary"
    printf '%-8s %6s %8s\n' step rc seconds
    for s in tests bench ncu; do printf '%-8s %6s %8s\n' "$s" "${RC[$s]:--}" "${SECS[$s]:--}"; done
    grep -E "passed|failed|error" "$OUT/pytest.log" 2> /dev/null | tail -1
    if [ -f "$OUT/gpu-h200.json" ]; then
        echo "merge the sections into bench/results/gpu-h200.json (bench.gpu --only merges into its --out)"
        python3 - "$OUT/gpu-h200.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"{'sections_done':<28} {json.dumps(r.get('sections_done'))}")
for key in ("ntt_ms", "h_ms", "msm_g1_ms", "msm_g2_ms", "cpu_msm_g2_ms", "fixed_base_points_per_s",
            "cpu_fixed_base_points_per_s", "setup_s", "cpu_setup_s", "h2d_pinned_gbps", "h2d_pageable_gbps"):
    print(f"{key:<28} {json.dumps(r.get(key))}")
for key in sorted(k for k in r if k.endswith("_skipped")):
    print(f"{key:<28} {json.dumps(r[key])}")
EOF
    else
        echo "no bench results"
    fi
    grep -E "Duration|Registers Per Thread|Achieved Occupancy|Compute \(SM\) Throughput|Executed Ipc Active|Issue Slots Busy" \
        "$OUT/ncu-msm-accumulate-g1-2p22.txt" 2> /dev/null | sed 's/^ */ncu: /'
    for s in tests bench; do  # a step that ran must have passed
        [[ $steps != *" $s "* ]] || [ "${RC[$s]:-1}" = 0 ] || return 1
    done
}

# == plan: partition
# A MiMC partition alone on the device (bench.partition: no Airflow, every proof verified) at each
# LOG2 (default "22 24"), plain, with precomputed copies (PROOFFLOW_MSM_PRECOMPUTE=$PRECOMPUTE: auto,
# the default, or bytes) and with the MSMs overlapped; REPEATS (5) measured proofs after a warm-up.
# Keys and caches are the stream plan's (/tmp/site, /dev/shm/pf-params, the default kernel and
# constraint-system directories): after a stream on a warm machine they are found there.
# Results: partition-LABEL-mimc-2pL{,-pre,-overlap}.json (LABEL h200, or h100).
plan_partition() {
    local sizes=${*:-22 24} precompute=${PRECOMPUTE:-auto} label status=0 L key variant suffix pre ovl name rc
    use_wheels .whl /tmp/site
    export OMP_NUM_THREADS=8
    unpack_kernels
    device_info
    label=$(card_label)
    for L in $sizes; do
        key=$KEYS/mimc-log2_$L-seed0
        ensure_key mimc "$L" "$key" || { status=1; continue; }
        for variant in ${VARIANTS:-plain pre overlap}; do
            case $variant in
                plain) suffix='' pre=0 ovl=0 ;;
                pre) suffix=-pre pre=$precompute ovl=0 ;;
                overlap) suffix=-overlap pre=0 ovl=1 ;;
            esac
            name=partition-$label-mimc-2p$L$suffix
            PROOFFLOW_MSM_PRECOMPUTE=$pre PROOFFLOW_MSM_OVERLAP=$ovl timeout -k 5 "$(left)" python3 -m bench.partition \
                --circuit mimc --log2 "$L" --key "$key" --warmup 1 --repeats "${REPEATS:-5}" --out "$OUT/$name.json" \
                > "$OUT/$name.log" 2>&1
            rc=$?
            [ $rc = 0 ] || status=$rc
            echo "2^$L $variant: rc $rc at $(since) s; $(tail -1 "$OUT/$name.log")"
        done
    done
    echo "done at $(since) s (rc $status)"
    return $status
}

# == plan: key-upload
# A proving key's upload to the device (bench.key_upload, Backend.prepare as the prover service does it):
# the key's tables compressed (PROOFFLOW_KEY_TABLES=compressed, the default: decompressed on the device)
# against the same key's xy tables, at each LOG2 (default 24; both keys from the GPU setup, in
# /dev/shm/pf-params: 4.8 + 9.7 GB at 2^24), REPEATS (3) uploads each after a warm-up; first the GPU
# decompression's tests (the GPU against the CPU's decompression, bit for bit at 2^10..2^16, a bad
# point's refusal, a compressed key's proof). 2^27 (one key at a time): the 2p27 plan's upload mode.
# Results: key-upload-LABEL-2pL.json, pytest-decompress.log.
plan_key_upload() {
    local sizes=${*:-24} label status=0 L dir rc
    use_wheels .whl /tmp/site
    unpack_kernels
    device_info
    label=$(card_label)
    timeout -k 5 200 python3 -m pytest -m gpu -q -rfEs -p no:cacheprovider tests/device/test_gpu_decompress.py \
        > "$OUT/pytest-decompress.log" 2>&1 || status=1
    tail -3 "$OUT/pytest-decompress.log"
    for L in $sizes; do
        dir=$KEYS/mimc-log2_$L-seed0
        PROOFFLOW_KEY_TABLES=compressed ensure_key mimc "$L" "$dir-compressed" || { status=1; continue; }
        PROOFFLOW_KEY_TABLES=xy ensure_key mimc "$L" "$dir-xy" || { status=1; continue; }
        timeout -k 5 "$(left)" python3 -m bench.key_upload --key "$dir-compressed" --key "$dir-xy" \
            --repeats "${REPEATS:-3}" --out "$OUT/key-upload-$label-2p$L.json" > "$OUT/key-upload-2p$L.log" 2>&1
        rc=$?
        [ $rc = 0 ] || status=$rc
        echo "2^$L: rc $rc at $(since) s"; cat "$OUT/key-upload-2p$L.log"
    done
    echo "done at $(since) s (rc $status)"
    return $status
}

# == plan: stream
# bench.stream on one Airflow (LocalExecutor, metadata in pgserver's Postgres: on SQLite the API
# server's writes failed with "database is locked" under this load), proof_runs of CIRCUIT (mimc, or
# bits) at 2^LOG2 (20, 22, 24, 26 or 27) triggered for DURATION_S (240) seconds of feeding; the key
# made by the GPU setup (at 2^26 and 2^27 by the stream-key plan in the call before) and the
# kernels built meanwhile (both kept in /dev/shm and the kernel cache for a call that follows). The
# steady window starts at the device phase of partition WARMUP_PARTS + 1 (16; empty: WARMUP_S, 20 s
# after the first trigger): a fresh machine's prover service took 21 s to start. The feeding's shape
# (bench/README.md says why): PARTS (8) a run; INFLIGHT runs in flight, DEPTH pool slots, SYNTH
# syntheses a run at once: 8, 16, 8 at 2^20 and 2^22, 4, 8, 2 at 2^24, 2, 2, 2 at 2^26 and 2^27 (4
# partitions a run, 2 of warm-up, 8 OpenMP threads a synthesis); PARALLELISM (32) executor
# slots; PER_TASK (1) partitions a chain of tasks proves (partitions_per_task). PROOFFLOW_CURVE_VARIANT,
# _MSM_BALANCED, _MSM_PRECOMPUTE, _MSM_OVERLAP, _KEY_BUDGET and
# AIRFLOW__SCHEDULER__* set for this script reach the deployment. GPU_TESTS (pytest ids) run beside
# the key setup. TAG names the result files, so two streams fit one call at 150 s of feeding each, e.g.
#   PROOFFLOW_MSM_PRECOMPUTE=auto CALL_S=285 TAG=-auto bash bench/device.sh stream 22 150;
#   CALL_S=285 TAG=-plain bash bench/device.sh stream 22 150
# Results: stream-LABEL-[CIRCUIT-]2pLOG2TAG.json + .png (mimc's unnamed), kernels.json, and
# run-...tar.gz (the timing DB, this call's logs and the deployment's; the tasks' own logs are too
# large to bring back).
plan_stream() {
    set -e
    local L=${1:?usage: device.sh stream LOG2 [DURATION_S] [WARMUP_S]} c=${CIRCUIT:-mimc} id
    stream_shape "$L" || return 2
    id=2p$L
    [ "$c" = mimc ] || id=$c-$id
    stream_begin
    ensure_key "$c" "$L" "$KEYS/$c-log2_${L}-seed0"
    # Airflow's start (~30 s), the drain (~40 s; S_DRAIN more for 2^26 and 2^27) and the analysis
    # (~20 s) come on top of the feeding
    stream_feed "$id" "${2:-240}" "${3:-20}" $((110 + S_DRAIN)) --circuit "$c" --log2 "$L" --params-cache "$KEYS"
}

# == plan: stream-key
# The stream plan's key alone (CIRCUIT, LOG2), by the GPU setup into KEYS, kept there
# for the stream plan in the call that follows on the warm machine: at 2^26 and 2^27 the setup
# takes most of a call (the constraint system's cache 53-99 s, the key 263-304 s at 2^27).
plan_stream_key() {
    local L=${1:?usage: device.sh stream-key LOG2} c=${CIRCUIT:-mimc}
    stream_shape "$L" || return 2
    use_wheels .whl /tmp/site
    unpack_kernels
    device_info
    ensure_key "$c" "$L" "$KEYS/$c-log2_${L}-seed0"
    df -h / /dev/shm | tail -2
}

# == plan: stream-circom
# The stream plan's stream with a circom circuit: proof_runs of circom-prep's FAMILY-2pLOG2
# (FAMILY chain; LOG2 20 or 22, 24 if prepared), each proving the next PARTS of its input.json
# files, each partition's witness generated from its input by the circuit's wasm inside its
# synthesize task; fed for DURATION_S (240) s in circom-prep's home (/root/pf-circom/home) with the
# stream plan's shape and settings (PARTS, INFLIGHT, DEPTH, SYNTH, PARALLELISM, WARMUP_PARTS,
# WARMUP_S, CALL_S, TAG, GPU_TESTS, the MSM and scheduler settings); then SAMPLE (8) proofs spread
# over the runs verified by `snarkjs groth16 verify` with circom-prep's node. CURVE=bn254: circom-prep's
# FAMILY-bn254-2pLOG2 (prepared with CURVE=bn254), proved over BN254; WITNESS=cpp: circom-prep's
# FAMILY-...-2pLOG2-cpp, its witnesses by circom's C++ generator (prepared with WITNESS=cpp). Every
# proof is verified by proofflow too (finalize_run, then bench.stream again from the bundles). Run it in the
# call after circom-prep, on the machine that one left warm (it says to run circom-prep first
# otherwise); carry .whl and proofflow.egg-info (and .kernels.tar.xz if made). Results:
# stream-LABEL-FAMILY-2pLOG2TAG.json + .png (LABEL h200, or h100), kernels.json and
# run-FAMILY-2pLOG2TAG.tar.gz, as the stream plan's.
plan_stream_circom() {
    set -e
    local L=${1:?usage: device.sh stream-circom LOG2 [DURATION_S] [WARMUP_S]}
    local tag=''
    [ "$CURVE" = bls12_381 ] || tag=$CURVE-
    local name=${FAMILY:-chain}-${tag}2p$1 home=$CIRCOM_ROOT/home
    [ "${WITNESS:-wasm}" = wasm ] || name=$name-$WITNESS
    if [ ! -f "$CIRCOM_ROOT/work/$name/steps/warm.json" ] || [ ! -x "$CIRCOM_ROOT/bin/node" ]; then
        echo "$name is not prepared in $CIRCOM_ROOT: run circom-prep first (bash bench/device.sh circom-prep $L," \
            "carry .snarkjs), then this plan in the call that follows, while the machine is warm"
        return 2
    fi
    stream_shape "$L" || return 2
    stream_begin
    circom_tools
    python3 -c "import wasmtime" || { echo "wasmtime is missing from $CIRCOM_ROOT/site: run circom-prep first"; return 2; }
    # on top of the stream plan's 110 s: the snarkjs sample (~2 s a proof) and a slower drain
    stream_feed "$name" "${2:-240}" "${3:-20}" 140 --circuit "$name" --inputs "$home/inputs/$name" --home "$home" \
        --snarkjs "$SNARKJS_BIN" --snarkjs-sample "${SAMPLE:-8}"
}

# stream_shape LOG2: the feeding's shape at 2^LOG2 (S_PARTS, S_INFLIGHT, S_DEPTH, S_SYNTH): PARTS,
# INFLIGHT, DEPTH and SYNTH, else the size's defaults (the stream plan's header); S_WARMUP
# (WARMUP_PARTS), S_OMP (OpenMP threads a synthesis), S_STAGING (STAGING_GIB: the shared staging's
# cap, which bounds the partitions synthesized ahead of the device: 32 GiB, 48 at 2^26 and 2^27,
# three 16 GiB segments), S_DRAIN and S_TIMEOUT (seconds a run may take to end once feeding stops).
# At 2^27 the 2p27 plan's device settings (no precomputed copies, no MSM overlap, the key budget at
# 0.6 of the device), unless set.
stream_shape() {
    local parts=8 inflight depth synth warmup=16 omp=2 staging=32
    S_DRAIN=0 S_TIMEOUT=120
    case $1 in
        20 | 22) inflight=8 depth=16 synth=8 ;;
        24) inflight=4 depth=8 synth=2 ;;
        26 | 27) parts=4 inflight=2 depth=2 synth=2 warmup=2 omp=8 staging=48 S_DRAIN=120 S_TIMEOUT=300 ;;
        *) echo "LOG2 must be 20, 22, 24, 26 or 27" >&2; return 2 ;;
    esac
    if [ "$1" = 27 ]; then
        export PROOFFLOW_MSM_PRECOMPUTE=${PROOFFLOW_MSM_PRECOMPUTE:-0} PROOFFLOW_MSM_OVERLAP=${PROOFFLOW_MSM_OVERLAP:-0}
        export PROOFFLOW_KEY_BUDGET=${PROOFFLOW_KEY_BUDGET:-0.6}
    fi
    S_PARTS=${PARTS:-$parts} S_INFLIGHT=${INFLIGHT:-$inflight} S_DEPTH=${DEPTH:-$depth} S_SYNTH=${SYNTH:-$synth}
    S_WARMUP=${WARMUP_PARTS-$warmup} S_OMP=$omp S_STAGING=${STAGING_GIB:-$staging}
}

# stream_begin: a stream's machine made ready, but for its key: the wheels, the card (S_LABEL), the
# kernels built in the background (S_KERNELS), GPU_TESTS beside them (S_TESTS), Airflow's metadata
# DB in pgserver's Postgres (S_META)
stream_begin() {
    use_wheels .whl /tmp/site
    bytecode_start /tmp/site
    export PROOFFLOW_SETUP_WORKERS=16 OMP_NUM_THREADS=${S_OMP:-2}  # syntheses run side by side
    device_info
    S_LABEL=$(card_label)
    python3 -c "import airflow, cupy; print('airflow', airflow.__version__, 'cupy', cupy.__version__)"
    df -h / /dev/shm | tail -2; free -g | head -2
    unpack_kernels
    python3 -m proofflow.cli kernels build --json > "$OUT/kernels.json" 2> "$OUT/kernels.log" &
    S_KERNELS=$!
    S_TESTS=
    if [ -n "${GPU_TESTS:-}" ]; then
        # shellcheck disable=SC2086
        timeout -k 5 240 python3 -m pytest -m gpu -q -rfEs -p no:cacheprovider $GPU_TESTS > "$OUT/pytest.log" 2>&1 &
        S_TESTS=$!
    fi
    S_META=$(python3 - <<'PY'
import pgserver  # runs as a user of its own when root; kept running for a call that follows
srv = pgserver.get_server("/dev/shm/pf-pg", cleanup_mode=None)
if "airflow" not in srv.psql("SELECT datname FROM pg_database;").split():
    srv.psql("CREATE DATABASE airflow;")
print(srv.get_uri("airflow").replace("postgresql://", "postgresql+psycopg2://", 1))  # async: asyncpg
PY
    )
    echo "Airflow metadata: $S_META"
}

# stream_feed ID DURATION_S WARMUP_S OVERHEAD_S ARGS...: once the kernels (and GPU_TESTS) are done,
# bench.stream proving what ARGS say for DURATION_S of feeding, or for what the call has left less
# OVERHEAD_S (Airflow's start, the drain, the analysis); results named by ID (stream-LABEL-ID.json),
# the timing DB and the logs in one archive, run-ID.tar.gz
stream_feed() {
    local id=$1 duration=$2 warmup=$3 overhead=$4 tag=${TAG:-} warmup_parts=${S_WARMUP-16}
    shift 4
    bytecode_wait
    if wait "$S_KERNELS"; then echo "kernels built at $(since) s"; else echo "kernels build failed (see kernels.log): the service compiles"; fi
    if [ -n "$S_TESTS" ]; then
        local rc=0
        wait "$S_TESTS" || rc=$?
        echo "GPU tests (rc $rc) done at $(since) s: $(tail -1 "$OUT/pytest.log")"
    fi
    local rest dur
    rest=$(left)
    dur=$((rest - overhead))
    [ "$dur" -gt "$duration" ] && dur=$duration
    local warm=${warmup_parts:+the first $warmup_parts partitions on the device}
    echo "streaming $id for $dur s (warm-up: ${warm:-$warmup s}), $rest s of the call left"
    # the deployment inherits no PROOFFLOW_* or AIRFLOW_* variable: the caller's MSM and scheduler
    # settings are passed on (AIRFLOW__SCHEDULER__MAX_TIS_PER_QUERY=0 is the next thing to try where
    # the device waits for partitions: each scheduler loop queues at most 16 task instances by default)
    local sets=() v
    for v in PROOFFLOW_CURVE_VARIANT PROOFFLOW_MSM_BALANCED PROOFFLOW_MSM_PRECOMPUTE PROOFFLOW_MSM_OVERLAP PROOFFLOW_KEY_BUDGET \
            $(compgen -v AIRFLOW__SCHEDULER__ || true); do
        if [ -n "${!v:-}" ]; then sets+=(--set "$v=${!v}"); fi
    done
    echo "MSM and scheduler settings: ${sets[*]:-defaults}"
    timeout -k 5 $((rest - 10)) python3 -m bench.stream --backend gpu "$@" --partitions "$S_PARTS" \
        --in-flight "$S_INFLIGHT" --duration "$dur" --warmup-s "$warmup" ${warmup_parts:+--warmup "$warmup_parts"} \
        --depth "$S_DEPTH" --scratch /dev/shm/pf-scratch --work "/tmp/pf-stream-$id" \
        --timing-db "sqlite:///$OUT/timing-$id.db" --metadata-db "$S_META" --max-active $((4 * S_INFLIGHT)) \
        --parallelism "${PARALLELISM:-32}" --timeout "$S_TIMEOUT" --synth-concurrency "$S_SYNTH" \
        --partitions-per-task "${PER_TASK:-1}" --set PROOFFLOW_STAGING_BUDGET=$((S_STAGING << 30)) \
        --set AIRFLOW__API__WORKERS=4 ${sets[@]+"${sets[@]}"} \
        --label "$S_LABEL" --out "$OUT/stream-$S_LABEL-$id$tag.json" --png "$OUT/stream-$S_LABEL-$id$tag.png" 2>&1 \
        | tee "$OUT/stream$tag.log" || true
    # one archive: a call brings back only so many files
    local logs
    logs=$(cd "/tmp/pf-stream-$id" 2> /dev/null && find . -name '*.log' -not -path '*dag_id=*' | sort || true)
    (cd "$OUT" && ls "timing-$id.db" kernels.log compileall.log pytest.log "setup-$id.log" "stream$tag.log" \
        2> /dev/null) > "$OUT/.files" || true
    # shellcheck disable=SC2086
    { tar cf "$OUT/run-$id$tag.tar" -C "$OUT" -T "$OUT/.files" && { [ -z "$logs" ] || tar rf "$OUT/run-$id$tag.tar" \
        -C "/tmp/pf-stream-$id" $logs; } && gzip -f "$OUT/run-$id$tag.tar" && (cd "$OUT" && xargs rm -f < .files); } || true
    rm -f "$OUT/.files" "$OUT/timing-$id.db".*
    echo "done at $(since) s"
}

# == plan: msm-sweep
# bench.msm_phases over the plans the MSM cost model is refitted to (each plan: its copies built
# once, then the median wall time of 3 MSMs and each kernel's time; NOTE labels the lines) into
# $OUT/msm-phases.jsonl. Append it to bench/results/msm-phases-h200.jsonl, then
#   python -m bench.fit_msm_cost bench/results/msm-phases-h200.jsonl --variant call --balanced
# CURVE=bn254 sweeps BN254's kernels, each group in its best variant (its lines name the curve and
# the variant: fit them with --curve bn254, G1's with --variant wide, G2's with --variant call).
plan_msm_sweep() {
    local status=0 jsonl=$OUT/msm-phases.jsonl note=${NOTE:-$(date -u +%F)}
    use_wheels .whl /tmp/site
    unpack_kernels
    phases() {  # NOTE-SUFFIX ARGS...
        local what=$1
        shift
        timeout -k 5 "$(left)" python3 -m bench.msm_phases --curve "$CURVE" "$@" --note "$note, $what" >> "$jsonl" \
            2>> "$OUT/msm-phases.log" || { status=1; echo "failed: $*"; }
        echo "$* done at $(since) s"
    }
    phases sweep --group g1 --log2 24 --plan 16,1 16,4 16,16 18,15 19,2 20,5 20,13 22,12
    phases sweep --group g1 --log2 22 --plan 16,1 16,4 16,8 16,16 18,15 19,7 20,13
    phases sweep --group g2 --log2 22 --plan 16,1 16,4 16,8 18,15 20,5 20,13
    echo "done at $(since) s (rc $status)"
    return $status
}

# == plan: pipeline
# bench.pipeline through a real Airflow on SQLite (scratch on /dev/shm): naive (in-process
# prove_gpu, pool of 1; first, the long one), the prover service pinned, and pageable, 2^LOG2 (22)
# with PARTITIONS (16) and DEPTH (4) slots, the key made by the GPU setup. What is left of the call
# runs bench.gpu's G1 MSM and CPU-reference sections. Results: pipeline-h200.json + .png, timing.db.
plan_pipeline() {
    set -e
    local log2=${1:-22} parts=${2:-16} depth=${3:-4} keys=$KEYS rest
    use_wheels .whl /tmp/site
    bytecode_start /tmp/site
    export PROOFFLOW_SETUP_WORKERS=16 OMP_NUM_THREADS=2  # 16 syntheses at once: 2 OpenMP threads each
    device_info
    python3 -c "import airflow, cupy; print('airflow', airflow.__version__, 'cupy', cupy.__version__)"
    python3 -m proofflow.prover setup --circuit mimc --log2 "$log2" --seed 0 --backend gpu --out "$keys/mimc-log2_${log2}-seed0"
    echo "key ready at $(since) s"
    bytecode_wait
    python3 -m bench.pipeline --backend gpu --log2 "$log2" --partitions "$parts" --depth "$depth" \
        --variants naive,proofflow,proofflow-pageable --params-cache "$keys" --scratch /dev/shm/pf-scratch \
        --work /tmp/pf-pipeline --timing-db "sqlite:///$OUT/timing.db" --parallelism 16 --timeout 420 \
        --out "$OUT/pipeline-h200.json" --png "$OUT/pipeline-h200.png" 2>&1 | tee "$OUT/pipeline.log"
    tar czf "$OUT/airflow-logs.tgz" -C /tmp/pf-pipeline --exclude='*.db' . 2> /dev/null || true
    rest=$(left)
    if [ "$rest" -gt 60 ]; then
        timeout -k 5 "$rest" python3 -m bench.gpu --only bench_msm bench_cpu_ntt --out "$OUT/gpu-h200-more.json" \
            2>&1 | tail -20 | tee "$OUT/bench-more.log" || true
    fi
    echo "done at $(since) s"
}

# == plan: pipeline-x2
# bench.scaling on kind nvidia-h200-x2: the same proof_run on GPU 0 alone, then on GPUs 0 and 1
# (pool gpu at 2 x DEPTH slots, one prover service pinned to each), 2^LOG2 (22), PARTITIONS (32).
# Results: pipeline-h200-x2.json (scaling, per_gpu_busy, proofs_per_minute) + .png, timing.db.
plan_pipeline_x2() {
    set -e
    local log2=${1:-22} parts=${2:-32} depth=${3:-4} keys=$KEYS
    # NVLink multicast stays off on the shared host (KINDS.md); nothing here uses it
    export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
    use_wheels .whl /tmp/site
    bytecode_start /tmp/site
    export PROOFFLOW_SETUP_WORKERS=32 OMP_NUM_THREADS=2  # the syntheses of 32 partitions at once
    nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader | tee "$OUT/device.txt"
    python3 -c "import airflow, cupy; print('airflow', airflow.__version__, 'cupy', cupy.__version__, 'GPUs', cupy.cuda.runtime.getDeviceCount())"
    python3 -m proofflow.prover setup --circuit mimc --log2 "$log2" --seed 0 --backend gpu --out "$keys/mimc-log2_${log2}-seed0"
    echo "key ready at $(since) s"
    bytecode_wait
    python3 -m bench.scaling --backend gpu --devices 0,1 --log2 "$log2" --partitions "$parts" --depth "$depth" \
        --params-cache "$keys" --scratch /dev/shm/pf-scratch --work /tmp/pf-scaling --timing-db "sqlite:///$OUT/timing.db" \
        --parallelism 32 --timeout 240 --out "$OUT/pipeline-h200-x2.json" --png "$OUT/pipeline-h200-x2.png" \
        2>&1 | tee "$OUT/scaling.log"
    tar czf "$OUT/airflow-logs.tgz" -C /tmp/pf-scaling --exclude='*.db' . 2> /dev/null || true
    echo "done at $(since) s"
}

# == plan: 2p26
# A 2^26 proof_run through Airflow, pinned vs pageable, in two calls back to back (the machine
# stays warm between them): `2p26 setup` builds the kernels and makes the 2^26 key on the GPU (and
# records what the resource check says of a 2^27 run here); `2p26 run` runs bench.pipeline
# (proofflow, proofflow-pageable), then bench.staging at 2^26 unless STAGING_BENCH=0. The key
# (38.6 GB) goes to the disk under /root/pf, the constraint-system cache (16 GB) and the shared
# staging (3 partitions of 8.6 GB) to /dev/shm. Results: pipeline-h200-2p26.json + .png,
# staging-h200-2p26.json.
plan_2p26() {
    local mode=${1:?usage: device.sh 2p26 setup|run} keys=/root/pf/params rc kernels s0 rest
    use_wheels .whl /tmp/site
    export PROOFFLOW_KERNEL_DIR=/root/pf/kernels PROOFFLOW_CACHE=/dev/shm/pf-cache OMP_NUM_THREADS=4
    unpack_kernels
    export PROOFFLOW_STAGING_BUDGET=$((26 << 30)) PROOFFLOW_SHARED_STAGING=/dev/shm/pf-staging
    case $mode in
    setup)
        device_info
        { df -h / /root /dev/shm; free -g; } | tee "$OUT/df.txt"
        PROOFFLOW_HOME=/root/pf/home python3 -m proofflow.cli run --log2 27 --partitions 4 --backend gpu \
            2>&1 | tee "$OUT/log2-27.txt"
        python3 -m proofflow.cli kernels build --json > "$OUT/kernels.json" 2> "$OUT/kernels.log" &
        kernels=$!
        s0=$SECONDS
        python3 -m proofflow.prover setup --circuit mimc --log2 26 --seed 0 --backend gpu \
            --out "$keys/mimc-log2_26-seed0" > "$OUT/setup-2p26.log" 2>&1
        rc=$?
        tail -15 "$OUT/setup-2p26.log"
        echo "setup 2^26: $((SECONDS - s0)) s"
        wait $kernels; echo "kernels: rc $?"
        du -sh "$keys" /dev/shm/pf-cache
        echo "setup done at $(since) s (rc $rc)"
        return $rc
        ;;
    run)
        python3 -m bench.pipeline --backend gpu --log2 26 --partitions 4 --warmup 1 --depth 4 \
            --variants proofflow,proofflow-pageable --params-cache "$keys" --scratch /root/pf/scratch \
            --work /root/pf/pipeline --timing-db "sqlite:///$OUT/timing-2p26.db" --parallelism 8 --synth-concurrency 2 \
            --timeout 330 --out "$OUT/pipeline-h200-2p26.json" --png "$OUT/pipeline-h200-2p26.png" 2>&1 \
            | tee "$OUT/pipeline.log"
        rc=${PIPESTATUS[0]}
        rest=$(( ${CALL_S:-570} - 10 - (SECONDS - T0) ))
        rm -rf /dev/shm/pf-staging  # the runs' idle segments: room for the benchmark's
        if [ "${STAGING_BENCH:-1}" = 1 ] && [ "$rest" -gt 60 ]; then
            timeout -k 5 "$rest" python3 -m bench.staging --log2 26 --reps 3 --out "$OUT/staging-h200-2p26.json" 2>&1 | tail -5
        fi
        tar czf "$OUT/airflow-logs.tgz" -C /root/pf/pipeline --exclude='*.db' . 2> /dev/null || true
        echo "run done at $(since) s (rc $rc)"
        return $rc
        ;;
    *) echo "2p26: setup or run, not $mode"; return 2 ;;
    esac
}

# == plan: 2p27
# A 2^27 partition of each family, mimc (dense) and bits (bit-heavy), proved with its key resident
# (bench.partition; targets: a median device phase <= 7 s for mimc, <= 2 s for bits). One key at a
# time, in calls back to back (the machine stays warm, /root and /dev/shm with it); each call runs
# MODE CIRCUIT steps: cs (the kernels and the constraint system's cache), setup (the key on the
# GPU into /dev/shm, its tables compressed unless PROOFFLOW_KEY_TABLES=xy), run (1 + REPEATS proofs:
# 5 bits, 3 mimc), upload (bench.key_upload: the key's upload alone, REPEATS (2) times after a
# warm-up, and its decompression kernels' time; against the xy key's 13.2-13.8 s of the run mode's
# key_upload in partition-h200-*-2p27.json), clean (the key and the cache).
# A step is not resumable: one cut at CALL_S is lost. The plan measured on 2026-12-05:
#   1. bash bench/device.sh 2p27 cs bits setup bits              kernels, cs 53 s, setup 263 s
#   2. bash bench/device.sh 2p27 run bits clean bits cs mimc     1 + 5 proofs 72 s, clean 9 s, cs 99 s
#   3. bash bench/device.sh 2p27 setup mimc run mimc             setup 304 s, 1 + 3 proofs 76 s
# Before step 3 /dev/shm must be free of other work's files: setup wants 100 GiB of MemAvailable.
# Where things go (docs/sizing.md has the accounting; tests/prover/test_resources.py checks it on a
# description of this machine): the key (38.7 GB compressed; 77.3 GB as xy) in /dev/shm, the constraint systems' cache
# (25-31 GB then; 4.3-9.4 GB in the cache's format 2) on the 64 GiB disk, a partition's a/b/c and witness (16 GiB)
# staged page-locked.
# On the device the key's tables, NTT tables and a proof's working set take 128.1 of 139.8 GiB,
# so no precomputed copies and no MSM overlap, and the key budget is raised to 0.6 of the device
# (the default half, 69.9 GiB, is short of the key's 72.0). Results: partition-LABEL-CIRCUIT-2p27.json.
plan_2p27() {
    [ $# -ge 2 ] && [ $(($# % 2)) = 0 ] || { echo "usage: device.sh 2p27 MODE CIRCUIT [MODE CIRCUIT ...]"; return 2; }
    use_wheels .whl /root/pf/site
    export PROOFFLOW_KERNEL_DIR=/root/pf/kernels PROOFFLOW_CACHE=/root/pf/cache
    unpack_kernels
    export PROOFFLOW_STAGING_BUDGET=$((16 << 30)) PROOFFLOW_SHARED_STAGING=/dev/shm/pf-staging
    export PROOFFLOW_MSM_PRECOMPUTE=0 PROOFFLOW_MSM_OVERLAP=0 PROOFFLOW_KEY_BUDGET=0.6
    local status=0
    while [ $# -ge 2 ]; do
        step_2p27 "$1" "$2" || status=$?  # a failed run still lets the next steps (clean, the next cs) go
        shift 2
    done
    echo "done at $(since) s (rc $status)"
    return $status
}
memory() { grep -E '^(MemTotal|MemAvailable|Shmem):' /proc/meminfo; df -h / /dev/shm | tail -n +2; }
step_2p27() {  # MODE CIRCUIT
    local mode=$1 c=$2 rc=0 s0=$SECONDS kernels repeats
    local key=/dev/shm/pf/params/$c-log2_27-seed0
    case "$c" in mimc | bits) ;; *) echo "circuit: mimc or bits, not $c"; return 2 ;; esac
    echo "== $mode $c at $(since) s"
    case "$mode" in
    cs)
        device_info
        memory | tee "$OUT/memory-$c.txt"
        python3 -m proofflow.cli kernels build --json > "$OUT/kernels.json" 2> "$OUT/kernels.log" &
        kernels=$!
        timeout -k 5 "$(left)" python3 -c "import sys; from proofflow.prover.circuits.by_name import get_circuit
get_circuit(sys.argv[1], 27).constraint_system" "$c"
        rc=$?
        echo "constraint system $c 2^27: $((SECONDS - s0)) s (rc $rc)"
        wait $kernels; echo "kernels: rc $?"
        du -sh "$PROOFFLOW_CACHE"/constraint-systems/*
        ;;
    setup)
        memory
        timeout -k 5 "$(left)" python3 -m proofflow.prover setup --circuit "$c" --log2 27 --seed 0 --backend gpu \
            --out "$key" > "$OUT/setup-$c.log" 2>&1
        rc=$?
        tail -4 "$OUT/setup-$c.log"
        echo "setup $c 2^27: $((SECONDS - s0)) s (rc $rc)"
        du -sh "$key"; memory
        ;;
    upload)
        timeout -k 5 "$(left)" python3 -m bench.key_upload --key "$key" --repeats "${REPEATS:-2}" \
            --out "$OUT/key-upload-$(card_label)-$c-2p27.json" 2>&1 | tee "$OUT/key-upload-$c.log"
        rc=${PIPESTATUS[0]}
        ;;
    run)
        memory
        repeats=$([ "$c" = mimc ] && echo 3 || echo 5)
        timeout -k 5 "$(left)" python3 -m bench.partition --circuit "$c" --log2 27 --key "$key" --backend gpu \
            --warmup 1 --repeats "${REPEATS:-$repeats}" --out "$OUT/partition-$(card_label)-$c-2p27.json" 2>&1 \
            | tee "$OUT/partition-$c.log"
        rc=${PIPESTATUS[0]}
        memory
        ;;
    clean)  # one key at a time (77.3 GB of /dev/shm each), one constraint system on the disk
        rm -rf "$key" "$PROOFFLOW_CACHE"/constraint-systems/"$c"-2^27-*
        memory
        ;;
    *) echo "mode: cs, setup, run, upload or clean, not $mode"; return 2 ;;
    esac
    echo "== $mode $c: $((SECONDS - s0)) s (rc $rc)"
    return $rc
}

# use_snarkjs_pack: the carried .snarkjs/ (the snarkjs-pack plan) in place: its wheels installed,
# node on the PATH, the circom toolchain in tests/circom/node_modules
use_snarkjs_pack() {
    [ -f .snarkjs/node.xz ] || { echo "no .snarkjs/ carried (bash bench/device.sh snarkjs-pack)"; exit 1; }
    use_wheels .snarkjs/whl /tmp/site
    mkdir -p /tmp/nodebin
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
}

# == plan: snarkjs
# The GPU tests of snarkjs keys, then bench.snarkjs --backend gpu at SIZES (default "16 18 20 22";
# snarkjs itself up to SNARKJS_MAX, 20) over CURVE (bls12_381, or bn254: snarkjs's bn128) -> snarkjs-LABEL.json
# (snarkjs-LABEL-bn128.json). Carry .snarkjs (the snarkjs-pack plan).
plan_snarkjs() {
    local sizes=${*:-16 18 20 22} curve=$SNARKJS_CURVE suffix=
    [ "$curve" = bls12381 ] || suffix=-$curve
    use_snarkjs_pack
    device_info
    timeout -k 10 120 python3 -m pytest -q -p no:cacheprovider -m gpu tests/device/test_gpu_circom.py 2>&1 \
        | tee "$OUT/pytest-circom.log"
    # shellcheck disable=SC2086
    python3 -m bench.snarkjs --backend gpu --curve "$curve" --sizes $sizes --snarkjs-max "${SNARKJS_MAX:-20}" \
        --repeats 5 --out "$OUT/snarkjs-$(card_label)$suffix.json" 2>&1 | tee "$OUT/bench-snarkjs.log"
}

# == plan: circom-family
# bench.circom_family --backend gpu at SIZES (default "20 22") for FAMILIES ("merkle sha256 chain"):
# each circuit compiled by circom2 here, its witness by snarkjs and by proofflow, a test-only zkey
# made on the GPU, REPEATS (5) proofflow proofs after a cold one, SNARKJS_REPEATS (1) snarkjs proofs
# on the host's cores up to 2^SNARKJS_MAX (22), each side's proof verified by the other. Every step
# is recorded in /root/pf-family as it ends (a circuit's large files go once it is done), so a call
# cut at CALL_S resumes at the step it lost in the next call on the same warm machine: call again
# until it says "complete". sha256 stops at 2^20 (circom2, wasm32, runs out of memory past it).
# Expect ~10 min for the three at 2^20 and ~9 min a family at 2^22, 4 of them snarkjs's proof
# (SNARKJS_MAX=20 leaves those out). Carry .snarkjs (snarkjs-pack) and .kernels.tar.xz if made.
# Results: circom-family-LABEL.json (every circuit done so far) and circom-family.log.
plan_circom_family() {
    local sizes=${*:-20 22} work=/root/pf-family label
    use_snarkjs_pack
    unpack_kernels
    device_info
    label=$(card_label)
    mkdir -p "$work"
    # shellcheck disable=SC2086
    resumable "$work/circom-family-$label.json" "$work/circom-family.log" python3 -m bench.circom_family \
        --backend gpu --sizes $sizes --families ${FAMILIES:-merkle sha256 chain} --repeats "${REPEATS:-5}" \
        --snarkjs-repeats "${SNARKJS_REPEATS:-1}" --witness-repeats "${WITNESS_REPEATS:-2}" \
        --snarkjs-max "${SNARKJS_MAX:-22}" --work "$work" --out "$work/circom-family-$label.json"
}

# == plan: dropin
# `proofflow groth16 prove` a process per proof, in the calling process against through the warm
# prover service (bench.dropin --backend gpu), at each LOG2 (default "16 20"), REPEATS (3).
# Result: dropin-LABEL.json.
plan_dropin() {
    local sizes=${*:-16 20}
    use_wheels .whl /tmp/site
    unpack_kernels
    device_info
    # shellcheck disable=SC2086
    timeout -k 10 "$(left)" python3 -m bench.dropin --backend gpu --sizes $sizes --repeats "${REPEATS:-3}" \
        --out "$OUT/dropin-$(card_label).json" 2>&1 | tee "$OUT/dropin.log"
    return "${PIPESTATUS[0]}"
}

# == plan: circom-partition
# The same MiMC constraints and witness proved as the built-in circuit and as a registered circom
# circuit (bench.circom_partition), at each LOG2 (default "20 22 24"), REPEATS (5) after a warm-up;
# over CURVE (bls12_381; bn254: the r1cs over bn128's prime, and the circom partition held to issue
# #37's bound, 0.15 s at 2^22 and 0.5 s at 2^24: minutes a size, two calls or more that resume).
# Keys, files and the registry under /root/pf-circom-partition: a call that follows on the warm
# machine resumes. Result: circom-partition-LABEL[-bn254].json (LABEL h200, or h100).
plan_circom_partition() {
    local sizes=${*:-20 22 24} work=/root/pf-circom-partition curve=$CURVE label name
    use_wheels .whl /tmp/site
    export OMP_NUM_THREADS=16 PROOFFLOW_HOME=/root/pf-circom-partition/home
    unpack_kernels
    device_info
    label=$(card_label)
    name=circom-partition-$label$([ "$curve" = bls12_381 ] || echo "-$curve")
    mkdir -p "$work"
    # shellcheck disable=SC2086
    resumable "$work/$name.json" "$work/run-$curve.log" python3 -m bench.circom_partition --backend gpu \
        --curve "$curve" --sizes $sizes --repeats "${REPEATS:-5}" --work "$work" --out "$work/$name.json"
}

# == plan: bn254
# BN254 on the GPU in one call (issue #37), its steps in STEPS ("tests bench partition"):
# 1. tests (BUDGET_TESTS, 220 s): the BN254 instances of the GPU tests (pytest -m gpu -k bn254): Fr products,
#    NTTs and H (odd coset too) against the CPU backend, G1 and G2 MSMs (edge scalars, every window width,
#    skewed and equal scalars) and fixed-base against the engine's C, GPU setups' keys equal to the CPU's,
#    arkworks's compressed points decompressed on the device (bad rows refused as the CPU refuses them), proofs
#    verified by the pairing (and equal to the CPU's byte for byte), a bn128 circom zkey written on the GPU equal
#    to the CPU's with its proofs verified through snarkjs's JSON files, the prover service proving a bn254 key
#    and a registered bn128 circuit, and (where Airflow imports) a proof_run over bn254 through it. Meanwhile
#    the GPU setup makes the partitions' keys (MiMC over BN254, /dev/shm/pf-params/bn254-mimc-log2_L-seed0),
#    waited for before step 2.
# 2. bench (BUDGET_BENCH, 300 s): bench.gpu --curve bn254 --only BENCH_ONLY ("bench_ntt bench_msm
#    bench_msm_g2 bench_msm_precomputed bench_msm_variants bench_msm_affine") --msm-logs MSM_LOGS ("20 22 24"): NTT at
#    2^20-2^27, the G1 and G2 MSMs (tables resident; G1 checked against the CPU at 2^20, every size against
#    (sum s_k k) G), then both over the precomputed copies a key's plan keeps (as a proof runs them) at 2^22
#    and 2^24, then G1 at 2^22 and 2^24 and G2 at 2^22 in each curve variant (mul32, wide, call; pieces and
#    spans: the variant chosen on BLS12-381 may not be BN254's best; the slim cubins leave the other
#    variants to compile there, ~1 minute), then the precomputed MSMs with 0, 3, 6 and all batch-affine
#    rounds before the accumulation (built, never yet timed: the accumulation is most of an MSM), recorded under
#    "bn254" in gpu-LABEL.json, which starts as bench/results/gpu-LABEL.json: copy it back. Targets (its
#    msm_targets, plain and precomputed): G1 2^24 <= 60 ms, G2 2^24 <= 200 ms.
# 3. partition (the rest of CALL_S): bench.partition --curve bn254 of a MiMC partition at each SIZE ("22 24"),
#    REPEATS (5) measured proofs after a warm-up, every one verified. Target (its "target"): the device phase
#    <= 0.15 s at 2^22 and <= 0.5 s at 2^24, issue #37's bound for a BN254 circom partition, whose device work
#    a MiMC partition's is (CURVE=bn254 bash bench/device.sh circom-partition 22 24 measures the circom one).
# Carry .whl (pgserver's wheel set aside: with it the carry passes 64 MiB) and .kernels.tar.xz, and tee the
# output: "set -o pipefail; bash bench/device.sh bn254 2>&1 | tee $OUT/bn254.log". Results (a call brings back
# 8 files): bn254.log, device.txt, pytest-bn254.log, gpu-LABEL.json, bench-gpu-bn254.log,
# partition-LABEL-bn254-mimc-2pL.json (two), partition-bn254.log (the setups' and the runs' output). Fails unless
# the tests and the benchmark that ran passed and every partition ran.
plan_bn254() {
    local sizes=${*:-22 24} steps=" ${STEPS:-tests bench partition} " label keys='' s L key name rc status=0
    use_wheels .whl /tmp/site
    python3 -c "import py_arkworks_bls12381, zksnake, cupy" || { echo "arkworks, zksnake or cupy missing: carry .whl"; exit 1; }
    export OMP_NUM_THREADS=8
    unpack_kernels
    device_info
    label=$(card_label)
    if [[ $steps == *" partition "* ]]; then
        # shellcheck disable=SC2086
        bn254_keys $sizes >> "$OUT/partition-bn254.log" 2>&1 &
        keys=$!
    fi
    local tests="tests/device/test_gpu_backend.py tests/device/test_gpu_g2.py tests/device/test_gpu_decompress.py
        tests/device/test_gpu_circom.py"
    if python3 -c "import sqlalchemy, alembic, great_expectations, airflow.sdk" 2> /dev/null; then
        tests="$tests tests/device/test_gpu_service.py"
    else
        echo "note: airflow/sqlalchemy/alembic/great-expectations not importable: the service's GPU tests are left out"
    fi
    # every test, not -x: one call should tell every failure
    # shellcheck disable=SC2086
    [[ $steps == *" tests "* ]] && timed tests "${BUDGET_TESTS:-220}" pytest-bn254.log \
        python3 -m pytest -m gpu -k bn254 -q -rfEs --durations=12 -p no:cacheprovider $tests
    if [ -n "$keys" ]; then
        wait "$keys" || status=1
        echo "keys: $(grep -c 'key ready\|key found' "$OUT/partition-bn254.log") of $(echo $sizes | wc -w) at $(since) s"
    fi
    if [[ $steps == *" bench "* ]]; then
        [ -f "bench/results/gpu-$label.json" ] && cp "bench/results/gpu-$label.json" "$OUT/"
        # shellcheck disable=SC2086
        timed bench "${BUDGET_BENCH:-300}" bench-gpu-bn254.log python3 -m bench.gpu --curve bn254 \
            --only ${BENCH_ONLY:-bench_ntt bench_msm bench_msm_g2 bench_msm_precomputed bench_msm_variants \
            bench_msm_affine} \
            --msm-logs ${MSM_LOGS:-20 22 24} \
            --out "$OUT/gpu-$label.json"
    fi
    if [[ $steps == *" partition "* ]]; then
        for L in $sizes; do
            key=$KEYS/bn254-mimc-log2_$L-seed0 name=partition-$label-bn254-mimc-2p$L
            [ -f "$key/params.json" ] || { echo "2^$L: no key (see partition-bn254.log)"; status=1; continue; }
            timeout -k 5 "$(left)" python3 -m bench.partition --circuit mimc --curve bn254 --log2 "$L" --key "$key" \
                --warmup 1 --repeats "${REPEATS:-5}" --out "$OUT/$name.json" >> "$OUT/partition-bn254.log" 2>&1
            rc=$?
            [ $rc = 0 ] || status=$rc
            echo "2^$L: rc $rc at $(since) s; $(tail -1 "$OUT/partition-bn254.log")"
        done
    fi
    echo "=== summary"
    for s in tests bench; do printf '%-6s rc %4s %6s s\n' "$s" "${RC[$s]:--}" "${SECS[$s]:--}"; done
    grep -E "passed|failed|error" "$OUT/pytest-bn254.log" 2> /dev/null | tail -1
    python3 - "$OUT" "$label" <<'EOF'
import json, pathlib, sys
out, label = pathlib.Path(sys.argv[1]), sys.argv[2]
gpu = out / f"gpu-{label}.json"
if gpu.exists():
    r = json.loads(gpu.read_text()).get("bn254", {})
    for key in ("sections_done", "ntt_ms", "msm_g1_ms", "msm_g2_ms", "cpu_msm_g1_ms", "msm_g1_skewed_ms",
                "msm_g1_precomputed_ms", "msm_g2_precomputed_ms", "msm_targets"):
        print(f"{key:<18} {json.dumps(r.get(key))}")
    for key in ("msm_g1_affine_ms", "msm_g2_affine_ms"):
        print(f"{key:<18} {json.dumps(r.get(key))}")
    for key in ("msm_g1_variants", "msm_g2_variants"):
        for size, row in r.get(key, {}).items():
            print(f"{key} 2^{size}: " + ", ".join(f"{k} {v['ms']['median']}" for k, v in row.items() if k != "speedup"))
for f in sorted(out.glob(f"partition-{label}-bn254-mimc-2p*.json")):
    r = json.loads(f.read_text())
    if "steady" in r:
        print(f"{f.stem}: device {json.dumps(r['steady']['device'])}, target {json.dumps(r['target'])}, "
              f"verified {r['all_verified']}, once {json.dumps(r['once_s'])}")
    else:
        print(f"{f.stem}: cut short (no measured proofs)")
EOF
    echo "done at $(since) s"
    for s in tests bench; do  # a step that ran must have passed
        [[ $steps != *" $s "* ]] || [ "${RC[$s]:-1}" = 0 ] || return 1
    done
    return $status
}

# bn254_keys LOG2...: MiMC keys over BN254 made by the GPU setup in /dev/shm/pf-params (one there is kept),
# one after another, within the call's time left
bn254_keys() {
    local L key
    for L in "$@"; do
        key=$KEYS/bn254-mimc-log2_$L-seed0
        if [ -f "$key/params.json" ]; then echo "2^$L key found in $key"; continue; fi
        timeout -k 5 "$(left)" python3 -m proofflow.prover setup --circuit mimc --curve bn254 --log2 "$L" --seed 0 \
            --backend gpu --out "$key" || { echo "2^$L key: setup failed"; return 1; }
        echo "2^$L key ready at $(since) s"
    done
}

# circom_root_from_pack: the carried .snarkjs/ (the snarkjs-pack plan) unpacked into $CIRCOM_ROOT once a
# machine, for the calls that follow without it: node in bin/, the circom toolchain in node_modules/ (a
# directory, not a link: circom2 cannot follow one), its wheels (arkworks, SQLAlchemy, wasmtime) in site/
circom_root_from_pack() {
    [ -f .snarkjs/node.xz ] || { echo "no .snarkjs/ carried (bash bench/device.sh snarkjs-pack)"; exit 1; }
    use_wheels .snarkjs/whl "$CIRCOM_ROOT/site"
    local stamp
    stamp=$(cat .snarkjs/node.xz .snarkjs/node_modules.tar.xz | md5sum | cut -d' ' -f1)
    if [ "$(cat "$CIRCOM_ROOT/.pack" 2> /dev/null)" != "$stamp" ]; then
        rm -rf "$CIRCOM_ROOT/node_modules" && mkdir -p "$CIRCOM_ROOT/bin"
        python3 - "$CIRCOM_ROOT" <<'PY' || exit 1
import lzma, os, shutil, sys, tarfile
root = sys.argv[1]
with lzma.open(".snarkjs/node.xz") as src, open(f"{root}/bin/node", "wb") as dst:
    shutil.copyfileobj(src, dst)
os.chmod(f"{root}/bin/node", 0o755)
with tarfile.open(".snarkjs/node_modules.tar.xz") as tf:
    tf.extractall(root, filter="tar")
PY
        echo "$stamp" > "$CIRCOM_ROOT/.pack"
    fi
    circom_tools
    cpp_tools
}

# cpp_tools: the carried packages of circom's C++ generator build (nasm, GMP, nlohmann-json) unpacked
# into $CIRCOM_ROOT/cpp once and put on the compiler's paths; libgmp.so left out there, so the
# generators link GMP statically and run in any task process
cpp_tools() {
    ls .snarkjs/cpp/*.deb > /dev/null 2>&1 || return 0
    local prefix=$CIRCOM_ROOT/cpp f
    if [ ! -x "$prefix/usr/bin/nasm" ]; then
        mkdir -p "$prefix"
        for f in .snarkjs/cpp/*.deb; do dpkg -x "$f" "$prefix"; done
        rm -f "$prefix"/usr/lib/x86_64-linux-gnu/libgmp*.so
    fi
    export PATH=$PATH:$prefix/usr/bin CPATH=$prefix/usr/include${CPATH:+:$CPATH}
    export LIBRARY_PATH=$prefix/usr/lib/x86_64-linux-gnu${LIBRARY_PATH:+:$LIBRARY_PATH}
    echo "C++ generator tools: $(command -v g++ || echo 'no g++'), $(nasm -v 2>&1 | head -1)"
}

# circom_tools: $CIRCOM_ROOT's node and snarkjs (SNARKJS_BIN, which bench.circom_family's circom2
# follows) on the PATH, its site (wasmtime) on PYTHONPATH after what is there
circom_tools() {
    export PATH=$CIRCOM_ROOT/bin:$PATH SNARKJS_BIN=$CIRCOM_ROOT/node_modules/.bin/snarkjs
    export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$CIRCOM_ROOT/site
    echo "node $(node --version), $("$SNARKJS_BIN" --version 2>&1 | head -1)"
}

# == plan: circom-prep
# What stream-circom proves, made on this machine for the calls that follow (carry .snarkjs, from
# the snarkjs-pack plan, and .kernels.tar.xz if made; not .whl: with .snarkjs it passes the 64 MiB
# a call carries): the circom toolchain and wasmtime into $CIRCOM_ROOT (/root/pf-circom), then
# bench.circom_prep at SIZES (default "20 22") for FAMILIES ("chain"; merkle's inputs take seconds
# each in Python): each circuit compiled by circom2 at the K that fills 2^L, a test-only zkey made
# on the GPU, registered as FAMILY-2pL in $CIRCOM_ROOT/home (the stream's PROOFFLOW_HOME) with
# INPUTS (64) distinct input.json files in its input root, its constraint system and its wasm's
# compiled code cached where the stream's tasks look, input 0's witness checked against the
# public signals computed without the circuit. Each step is recorded as it ends: a call cut at
# CALL_S resumes in the next one on the warm machine; call again until it says "complete".
# CURVE=bn254 compiles for circom's bn128 prime and registers FAMILY-bn254-2pL (issue #37's BN254
# stream: then CURVE=bn254 for stream-circom too). WITNESS=cpp also builds circom's C++ witness
# generator (with .snarkjs/cpp's nasm, GMP and nlohmann-json, and the image's g++) and registers
# FAMILY-...-2pL-cpp, whose partitions' witnesses it computes (then WITNESS=cpp for stream-circom).
# Results: circom-prep.json (each circuit's K, constraints, steps' seconds, a cold witness and
# a/b/c) and circom-prep.log.
plan_circom_prep() {
    local sizes=${*:-20 22}
    circom_root_from_pack
    unpack_kernels
    device_info
    mkdir -p "$CIRCOM_ROOT/work"
    # shellcheck disable=SC2086
    resumable "$CIRCOM_ROOT/circom-prep.json" "$CIRCOM_ROOT/circom-prep.log" python3 -m bench.circom_prep \
        --backend gpu --sizes $sizes --families ${FAMILIES:-chain} --inputs "${INPUTS:-64}" --curve "$CURVE" \
        --witness "${WITNESS:-wasm}" \
        --home "$CIRCOM_ROOT/home" --work "$CIRCOM_ROOT/work" --out "$CIRCOM_ROOT/circom-prep.json"
}

# == plan: staging
# Zero-copy staging and shipped kernels (~7 minutes): 1. every kernel module compiled into an
# empty kernel cache (what a fresh worker paid before the cache); 2. service_start from that
# cache, a fresh prover service 3 times -> kernels-h200.json; 3. the GPU tests of the service,
# the kernel cache and the backend; 4. bench.staging at 2^24 and 2^26 -> staging-h200.json.
# The carried cubins are not unpacked: step 1 measures the build. Fails unless every step passed.
plan_staging() {
    local s
    use_wheels .whl /tmp/site
    export PROOFFLOW_HOME=/tmp/pf-home PROOFFLOW_KERNEL_DIR=/tmp/pf-kernels
    device_info
    timed kernels 240 kernels.log python3 -m proofflow.cli kernels build --json
    timed service 90 service.log python3 - "$OUT/kernels-h200.json" "${SECS[kernels]}" <<'EOF'
import json, sys, time
from proofflow.prover import device
from proofflow.prover.device import cache
from proofflow.prover.service.client import ServiceClient
starts = []
for _ in range(3):  # a fresh service each time: CUDA context, kernels from the cache, warm-up
    c = ServiceClient("gpu", 0, idle_s=30)
    starts.append(round(c.ensure_running(), 2))
    c.stop()
    time.sleep(1.5)
rows = cache.entries()
out = {"device": device.name(), "nvrtc": list(cache.nvrtc_version()), "kernels_build_s": int(sys.argv[2]),
       "modules": [{k: r[k] for k in ("module", "arch", "bytes") if k in r} for r in rows],
       "service_start_s": starts, "service_start_s_median": sorted(starts)[1]}
json.dump(out, open(sys.argv[1], "w"), indent=2)
print(json.dumps(out, indent=2))
EOF
    timed tests 240 pytest.log python3 -m pytest -m gpu -q -rfEs -p no:cacheprovider --durations=8 \
        tests/device/test_gpu_service.py tests/device/test_gpu_kernel_cache.py tests/device/test_gpu_backend.py
    timed staging 200 staging.log python3 -m bench.staging --log2 24 26 --out "$OUT/staging-h200.json"
    echo "=== summary"
    for s in kernels service tests staging; do printf '%-8s rc %4s %6s s\n' "$s" "${RC[$s]:-?}" "${SECS[$s]:-?}"; done
    grep -E "passed|failed|error" "$OUT/pytest.log" | tail -1
    for s in kernels service tests staging; do [ "${RC[$s]:-1}" = 0 ] || return 1; done
}

# == end of plans
PLAN=${1:-}
case $PLAN in
    wheels | kernels | snarkjs-pack) ;;
    session | partition | key-upload | stream | stream-key | stream-circom | msm-sweep | pipeline | pipeline-x2 | 2p26 | 2p27 | \
        snarkjs | circom-family | circom-partition | circom-prep | dropin | staging | bn254)
        mkdir -p "$OUT" ;;
    *) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
esac
shift
"plan_${PLAN//-/_}" "$@"
