# syntax=docker/dockerfile:1
# Images of the Kafka group coordinator (docs/CONTAINERS.md). Targets:
#   coordinator (default, last stage)  the server only: no Java, no pyspark, no pyarrow, no pip (docs/CONTAINERS.md has
#                                      the size of each layer)
#   spark                              + openjdk-17-jre-headless + pyspark, runs spark_jobs.* on the data volume
#   test                               + the Python Kafka clients and kcat: the compose test runner
#   postgres                           Debian's PostgreSQL 15: the log of record of the cluster profile
# Works with docker/buildx and with podman/buildah (the base image built locally there, docs/CONTAINERS.md).
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# ---------------------------------------------------------------- build: a venv with the server installed
FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
RUN python3 -m venv /opt/venv
WORKDIR /src
# Dependencies first (this layer changes only with pyproject.toml), then the project itself.
# A C compiler for the native fast lane (coordinator/fastlane/*.pyx, setup.py) and binutils' strip: this stage only;
# the runtime stage copies the venv and has neither. Python's headers too where the base image's Python has none
# (Debian's python3, as in the base image the compose test builds when python:3.11-slim cannot be pulled).
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends gcc libc6-dev binutils >/dev/null \
 && { python3 -c "import os, sysconfig, sys; sys.exit(not os.path.exists(sysconfig.get_paths()['include'] + '/Python.h'))" \
      || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libpython3-dev >/dev/null; }
COPY pyproject.toml README.md ./
COPY docker/requirements.py /usr/local/bin/requirements-of
RUN python3 /usr/local/bin/requirements-of pyproject.toml > /tmp/requirements.txt \
 && /opt/venv/bin/pip install --quiet -r /tmp/requirements.txt
COPY setup.py ./
COPY primitives ./primitives
COPY rules ./rules
COPY protocol ./protocol
COPY coordinator ./coordinator
COPY storage ./storage
COPY spark_jobs ./spark_jobs
# pip builds the wheel with setup.py (Cython from the build requirements): the image fails here if the native fast
# lane did not compile (a machine without a compiler gets a warning and the Python path; an image must not).
RUN /opt/venv/bin/pip install --quiet --no-deps . \
 && /opt/venv/bin/python -c "import coordinator.net.server, storage.snapshot, protocol.apis; from storage.record_readers import AcceleratedRecordReader, default_reader; assert isinstance(default_reader(), AcceleratedRecordReader)" \
 && cd / && /opt/venv/bin/python -c "from coordinator.fastlane import native; d = native.describe(); assert d['path'] == 'native', d"
# What the runtime needs of the venv, nothing more: the installers (pip, setuptools) go, so do the extension modules'
# debug symbols (uvloop's alone is 13 MB of 14; binutils' strip exists only in this stage) and the bytecode caches.
RUN find /opt/venv -name '*.so' -exec strip --strip-unneeded {} + \
 && /opt/venv/bin/python -m pip uninstall --quiet -y pip setuptools \
 && /opt/venv/bin/python -c "import uvloop, asyncpg, re2, cramjam, crc32c, aiohttp, coordinator.app" \
 && find /opt/venv -name __pycache__ -prune -exec rm -rf {} +

# ---------------------------------------------------------------- runtime base shared by every target
FROM ${PYTHON_IMAGE} AS runtime
ENV PATH=/opt/venv/bin:$PATH PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    COORDINATOR_LISTENERS=PLAINTEXT://0.0.0.0:9092 \
    COORDINATOR_HTTP_LISTENER=http://0.0.0.0:9644 \
    COORDINATOR_LOG_DIRS=/data
RUN groupadd --system --gid 10001 coordinator \
 && useradd --system --uid 10001 --gid coordinator --home-dir /data --no-create-home --shell /usr/sbin/nologin coordinator \
 && mkdir -p /data && chown coordinator:coordinator /data
COPY --from=build /opt/venv /opt/venv
COPY docker/healthcheck.py /usr/local/bin/coordinator-healthcheck
WORKDIR /data

# ---------------------------------------------------------------- spark: the PySpark jobs over the data volume
# Also the image of the compose `spark` profile's standalone master and worker (docs/CONTAINERS.md).
FROM runtime AS spark
USER root
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends openjdk-17-jre-headless procps >/dev/null \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/pyproject.toml /usr/local/bin/requirements-of /tmp/
RUN python3 /tmp/requirements-of /tmp/pyproject.toml spark > /tmp/requirements.txt \
 && python -m ensurepip --default-pip >/dev/null && pip install --quiet -r /tmp/requirements.txt && rm -f /tmp/requirements.txt
USER coordinator
VOLUME ["/data"]
ENTRYPOINT ["python", "-m"]
CMD ["spark_jobs.expire", "--master", "local[*]", "--log-dirs", "/data"]

# ---------------------------------------------------------------- test: real Python clients + kcat against a coordinator
FROM runtime AS test
USER root
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends kcat >/dev/null \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/pyproject.toml /usr/local/bin/requirements-of /tmp/
RUN python3 /tmp/requirements-of /tmp/pyproject.toml test > /tmp/requirements.txt \
 && python -m ensurepip --default-pip >/dev/null && pip install --quiet -r /tmp/requirements.txt && rm -f /tmp/requirements.txt
WORKDIR /app
COPY pyproject.toml ./
COPY primitives ./primitives
COPY rules ./rules
COPY protocol ./protocol
COPY coordinator ./coordinator
COPY storage ./storage
COPY spark_jobs ./spark_jobs
COPY tests ./tests
RUN chown -R coordinator:coordinator /app
USER coordinator
ENV COORDINATOR_BOOTSTRAP=coordinator:9092
CMD ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/clients/test_compose.py"]

# ---------------------------------------------------------------- postgres: the cluster profile's log of record
# Debian bookworm's PostgreSQL 15 on the same base (no registry needed: docs/CONTAINERS.md). Not a production setup:
# one server, no replication or backups (docs/CLUSTER.md).
FROM ${PYTHON_IMAGE} AS postgres
RUN mkdir -p /etc/postgresql-common/createcluster.d \
 && echo "create_main_cluster = false" > /etc/postgresql-common/createcluster.d/no-main.conf \
 && apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql-15 >/dev/null \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /var/lib/postgresql/data && chown postgres:postgres /var/lib/postgresql/data && chmod 700 /var/lib/postgresql/data
COPY docker/postgres-entrypoint.sh /usr/local/bin/postgres-entrypoint
ENV PGDATA=/var/lib/postgresql/data
USER postgres
VOLUME ["/var/lib/postgresql/data"]
EXPOSE 5432
STOPSIGNAL SIGINT
HEALTHCHECK --interval=5s --timeout=5s --start-period=10s --retries=6 CMD ["/usr/lib/postgresql/15/bin/pg_isready", "-h", "127.0.0.1", "-q"]
CMD ["/usr/local/bin/postgres-entrypoint"]

# ---------------------------------------------------------------- coordinator (default target): the server
FROM runtime AS coordinator
USER coordinator
VOLUME ["/data"]
EXPOSE 9092 9644
STOPSIGNAL SIGTERM
# GET /health/ready on the operations endpoint (docker/healthcheck.py; 9644: /metrics, the console); with
# COORDINATOR_HTTP_LISTENER emptied, ApiVersions over the wire to COORDINATOR_HEALTHCHECK_ADDRESS (127.0.0.1:9092).
HEALTHCHECK --interval=10s --timeout=5s --start-period=20s --retries=3 CMD ["python", "/usr/local/bin/coordinator-healthcheck"]
# Exec form: python is PID 1 and gets SIGTERM itself (the server stops accepting, finishes in-flight requests, exits 0).
CMD ["python", "-m", "coordinator", "serve"]
