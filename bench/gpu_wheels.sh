#!/usr/bin/env bash
# Fetch into .whl/ (git-ignored) the wheels that the H200 image lacks for bench/h200_pipeline.sh
# and bench/gpu_session.sh: Airflow's core, task SDK and standard provider, Great Expectations,
# SQLAlchemy, alembic and arkworks, with their needs, resolved for the image's Python 3.12.
# The image's own packages (KINDS.md lists them) are dropped: they are there already, and the
# set must stay under the device call's 64 MiB carry limit.
#   usage: bash bench/gpu_wheels.sh     (needs PyPI; about 50 MB, a minute)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-python3}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$PY" -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d "$tmp" \
    apache-airflow-core==3.3.2 apache-airflow-task-sdk==1.3.2 apache-airflow-providers-standard==1.21.0 \
    great-expectations==1.24.1 sqlalchemy==2.1.9 alembic==1.20.1 py-arkworks-bls12381==0.5.0 \
    psycopg2-binary==2.9.13 asyncpg==0.32.0 pgserver==0.1.4  # Postgres for Airflow's metadata (h200_stream.sh)
# the image's packages, as KINDS.md names them (normalized: lower case, '-' for '_' and '.')
on_image=" absl-py accelerate aiofiles aiohappyeyeballs aiohttp aiosignal annotated-doc anyio attrs
 certifi charset-normalizer click cloudpickle colorama contourpy cycler filelock fonttools frozenlist
 fsspec grpcio h11 httpcore httpx idna iniconfig jinja2 kiwisolver markdown markdown-it-py markupsafe
 matplotlib mdurl msgpack multidict narwhals networkx numpy packaging pandas pathspec pillow pip
 pluggy prometheus-client propcache protobuf psutil pyarrow pygments pyparsing pytest
 python-dateutil pyyaml regex requests rich scipy setuptools shellingham simplejson six
 sortedcontainers tabulate toolz tqdm typer typing-extensions typing-inspect urllib3 uvloop
 werkzeug wheel wrapt xxhash yarl zipp mypy-extensions "
on_image=" $(echo $on_image) "  # one space between names: a name at a line's end matches too
rm -rf .whl; mkdir -p .whl
for w in "$tmp"/*.whl; do
    name=$(basename "$w" | cut -d- -f1 | tr 'A-Z_.' 'a-z--')
    # babel (11 MB): only the task SDK's locale date macros import it, none of proofflow's tasks
    case "$on_image babel " in *" $name "*) ;; *) cp "$w" .whl/ ;; esac
done
# pgserver's Postgres without its headers and client tools: the carry limit is near
"$PY" - .whl/pgserver-*.whl <<'EOF'
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
