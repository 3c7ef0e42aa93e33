# Sourced by the device scripts that run after a stream on a warm machine: the carried wheels
# (.whl/, from bench/gpu_wheels.sh) in /tmp/site, installed unless a call before this one on
# the same machine (bench/h200_stream.sh) did, and put on the paths.
if [ ! -e /tmp/site/airflow ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
        || { echo "installing the carried wheels failed"; exit 1; }
fi
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH
