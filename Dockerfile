# proofflow's image: the project with its pinned dependencies (Airflow 3, the Celery provider
# and the FAB auth manager's provider included); every Airflow service of docker-compose.yml runs it.
#   docker build -t proofflow:0.1.0 .                                      # CPU services
#   docker build --build-arg PROOFFLOW_EXTRAS=celery,fab,statsd,gpu -t proofflow-gpu:0.1.0 .   # GPU worker
FROM python:3.11.11-slim-bookworm

# gcc (with OpenMP) compiles the CPU field kernels (proofflow/prover/native), done once below.
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev \
 && rm -rf /var/lib/apt/lists/*

ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    AIRFLOW_HOME=/opt/airflow \
    PROOFFLOW_HOME=/var/lib/proofflow \
    PROOFFLOW_CACHE=/opt/proofflow-cache

WORKDIR /opt/proofflow
COPY pyproject.toml README.md ./
COPY proofflow proofflow
COPY dags dags

# The GPU image (extras with gpu) also gets NVRTC and the other CUDA components CuPy compiles
# the kernels with, through CuPy's own [ctk] extra at the CuPy version pyproject.toml pins;
# the host gives the driver (NVIDIA Container Toolkit).
ARG PROOFFLOW_EXTRAS=celery,fab,statsd
RUN pip install ".[${PROOFFLOW_EXTRAS}]" \
 && case ",${PROOFFLOW_EXTRAS}," in *,gpu,*) \
      pip install "cupy-cuda12x[ctk]==$(pip show cupy-cuda12x | sed -n 's/^Version: //p')" ;; esac

RUN useradd --uid 50000 --create-home proofflow \
 && mkdir -p "$AIRFLOW_HOME" "$PROOFFLOW_HOME" "$PROOFFLOW_CACHE" \
 && chown proofflow "$AIRFLOW_HOME" "$PROOFFLOW_HOME" "$PROOFFLOW_CACHE"
USER proofflow
# compile the CPU kernels now, not in the first task of every container
RUN python -c "from proofflow.prover.native import load; load('fr')"
# The GPU image also ships its CUDA kernels compiled (issue #19): NVRTC needs no GPU, so every
# module is compiled here into cubins for the H100/H200 (sm_90; other GPUs: --build-arg
# PROOFFLOW_CUDA_ARCHS=80,90) in $PROOFFLOW_CACHE/kernels, and a fresh worker loads them instead
# of compiling for 79-143 s before its first proof. A GPU of an arch not built here still works:
# its first process compiles the missing cubins into the same directory.
ARG PROOFFLOW_CUDA_ARCHS=90
RUN case ",${PROOFFLOW_EXTRAS}," in *,gpu,*) proofflow kernels build --arch "${PROOFFLOW_CUDA_ARCHS}" ;; esac
