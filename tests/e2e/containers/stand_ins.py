"""Stand-ins, made from Debian's packages, for the base images the Dockerfile and compose name.

No container registry is reachable from these machines, so `python:3.11-slim`, `nats:2.10-alpine`
(and `nats:2.10`, which testcontainers asks for) and `postgres:16` are made locally: debootstrap
`--variant=minbase` with the packages each needs, a few files of our own (entrypoints that behave
like the official images' for what we use), then `docker import`. Each root filesystem is kept as a
tarball under ~/.cache/phalanx/images (PHALANX_IMAGE_CACHE), named by a hash of its recipe, so a
second run on the same machine only imports. An image an engine already holds is left alone.

    python -m tests.e2e.containers.stand_ins      # into the engine DOCKER_HOST names, for compose
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.e2e.containers.engine import Engine, NoEngine, apt_install, docker_engine

SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
# What no container needs and every image would carry: documentation, manuals, apt's lists.
TRIMMED = ("usr/share/doc", "usr/share/man", "usr/share/info", "var/cache/apt", "var/lib/apt/lists")

NATS_ENTRYPOINT = """#!/bin/sh
# As the nats image's entrypoint: arguments that start with '-' are nats-server's.
set -e
if [ "${1#-}" != "$1" ]; then
  set -- nats-server "$@"
fi
exec "$@"
"""

# Honours what the postgres image documents and this project uses: POSTGRES_USER, POSTGRES_PASSWORD,
# POSTGRES_DB, PGDATA and the scripts in /docker-entrypoint-initdb.d, run once on a fresh data folder
# while the server listens on its socket only; then the server on every address, as `postgres`.
POSTGRES_ENTRYPOINT = """#!/bin/sh
set -eu
if [ "$#" -gt 0 ] && [ "$1" != postgres ] && [ "${1#-}" = "$1" ]; then
  exec "$@"
fi
[ "${1:-}" = postgres ] && shift
: "${PGDATA:=/var/lib/postgresql/data}" "${POSTGRES_USER:=postgres}"
: "${POSTGRES_DB:=$POSTGRES_USER}"
export PGDATA POSTGRES_USER POSTGRES_DB
if [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA" /var/run/postgresql
  chown -R postgres:postgres "$PGDATA" /var/run/postgresql
  chmod 700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" postgres "$@"
fi
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  if [ -z "${POSTGRES_PASSWORD:-}" ]; then
    echo "POSTGRES_PASSWORD must be set" >&2
    exit 1
  fi
  pwfile=$(mktemp)
  printf '%s\\n' "$POSTGRES_PASSWORD" >"$pwfile"
  initdb -D "$PGDATA" --username="$POSTGRES_USER" --pwfile="$pwfile" --encoding=UTF8 \\
    --locale=C.UTF-8 --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f "$pwfile"
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
  pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
  if [ "$POSTGRES_DB" != postgres ]; then
    psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres -q \\
      -c "CREATE DATABASE \\"$POSTGRES_DB\\""
  fi
  for script in /docker-entrypoint-initdb.d/*; do
    case "$script" in
      *.sh) echo "running $script"; if [ -x "$script" ]; then "$script"; else . "$script"; fi ;;
      *.sql) psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" -f "$script" ;;
    esac
  done
  pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
fi
exec postgres -D "$PGDATA" -c listen_addresses='*' "$@"
"""

STANDARD_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass(frozen=True)
class StandIn:
    names: tuple[str, ...]  # the first is imported, the rest are tags of it
    packages: tuple[str, ...]
    files: dict[str, str] = field(default_factory=dict)  # path in the image -> executable text
    links: dict[str, str] = field(default_factory=dict)  # path -> target
    changes: tuple[str, ...] = ()  # Dockerfile instructions for `docker import --change`
    host_ca_bundle: bool = False  # the host's CA bundle, so that pip in the image reaches PyPI
    removed: tuple[str, ...] = ()  # paths a package's scripts leave that the image must not have

    def key(self) -> str:
        """Names the root filesystem: what goes into it (the `changes` apply at import)."""
        recipe = json.dumps([SUITE, *self.names, self.packages, self.files, self.links, self.removed])
        digest = hashlib.sha256(recipe.encode())
        if self.host_ca_bundle and HOST_CA_BUNDLE.exists():
            digest.update(HOST_CA_BUNDLE.read_bytes())
        return digest.hexdigest()[:16]


PYTHON = StandIn(
    names=("python:3.11-slim",),
    packages=("python3", "python3-venv"),
    links={"usr/bin/python": "python3"},
    host_ca_bundle=True,
    changes=(
        f"ENV PATH={STANDARD_PATH}",
        "ENV LANG=C.UTF-8",
        f"ENV PIP_CERT={HOST_CA_BUNDLE}",
        f"ENV SSL_CERT_FILE={HOST_CA_BUNDLE}",
        'CMD ["python3"]',
    ),
)
NATS = StandIn(
    names=("nats:2.10-alpine", "nats:2.10"),
    packages=("nats-server", "wget"),
    files={"usr/local/bin/docker-entrypoint.sh": NATS_ENTRYPOINT},
    changes=(
        f"ENV PATH={STANDARD_PATH}",
        "EXPOSE 4222 6222 8222",
        'ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]',
        'CMD ["nats-server"]',
    ),
)
POSTGRES = StandIn(
    names=("postgres:16",),
    packages=("postgresql-15",),
    files={"usr/local/bin/docker-entrypoint.sh": POSTGRES_ENTRYPOINT},
    # The package's scripts create a cluster of their own; the entrypoint makes the one we use.
    removed=("var/lib/postgresql/15", "etc/postgresql/15"),
    changes=(
        f"ENV PATH=/usr/lib/postgresql/15/bin:{STANDARD_PATH}",
        "ENV LANG=C.UTF-8",
        "ENV PGDATA=/var/lib/postgresql/data",
        "EXPOSE 5432",
        'ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]',
        'CMD ["postgres"]',
    ),
)
STAND_INS = (PYTHON, NATS, POSTGRES)


def cache_dir() -> Path:
    default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "phalanx" / "images"
    folder = Path(os.environ.get("PHALANX_IMAGE_CACHE", default))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _run(command: list[str], what: str, timeout: float = 900) -> None:
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"{what} failed ({result.returncode}):\n{(result.stdout + result.stderr)[-3000:]}")


def _root_filesystem(stand_in: StandIn, cache: Path) -> Path:
    """The stand-in's root filesystem as a tarball in the cache, made now when it is not there."""
    tarball = cache / f"{stand_in.names[0].replace(':', '-').replace('/', '-')}-{stand_in.key()}.tar"
    if tarball.exists():
        return tarball
    if os.geteuid() != 0:
        raise NoEngine(f"the stand-in for {stand_in.names[0]} must be made, and debootstrap needs root")
    if not shutil.which("debootstrap") or not shutil.which("eatmydata"):
        apt_install("debootstrap", "eatmydata")
    debs = cache / "debs"
    debs.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache, prefix="rootfs-") as folder:
        root = Path(folder) / "root"
        # eatmydata: dpkg's fsync after every file is most of debootstrap's time on a busy disk,
        # and a root filesystem that is about to be packed needs none of it.
        _run(
            [
                "eatmydata",
                "debootstrap",
                "--variant=minbase",
                f"--cache-dir={debs}",
                f"--include={','.join(stand_in.packages)}",
                SUITE,
                str(root),
                MIRROR,
            ],
            f"debootstrap for {stand_in.names[0]}",
        )
        for path in (*TRIMMED, *stand_in.removed):
            shutil.rmtree(root / path, ignore_errors=True)
        for path, text in stand_in.files.items():
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(text)
            (root / path).chmod(0o755)
        for path, target in stand_in.links.items():
            (root / path).unlink(missing_ok=True)
            (root / path).symlink_to(target)
        if stand_in.host_ca_bundle:
            bundle = root / str(HOST_CA_BUNDLE).lstrip("/")
            bundle.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(HOST_CA_BUNDLE, bundle)
        partial = tarball.with_suffix(".partial")
        _run(
            ["tar", "--numeric-owner", "-C", str(root), "-cf", str(partial), "."],
            "packing the root filesystem",
        )
        partial.rename(tarball)
    return tarball


def has_image(engine: Engine, name: str) -> bool:
    return engine.docker("image", "inspect", name, check=False).returncode == 0


def provide(engine: Engine, log: list[str] | None = None) -> None:
    """Every stand-in in the engine: imported from the cache, made first where the cache lacks it."""
    cache = cache_dir()
    for stand_in in STAND_INS:
        missing = [name for name in stand_in.names if not has_image(engine, name)]
        if not missing:
            continue
        started = time.monotonic()
        cached = any(cache.glob(f"*-{stand_in.key()}.tar"))
        tarball = _root_filesystem(stand_in, cache)
        command = ["import"]
        for change in stand_in.changes:
            command += ["--change", change]
        engine.docker(*command, str(tarball), stand_in.names[0])
        for name in stand_in.names[1:]:
            engine.docker("tag", stand_in.names[0], name)
        how = "imported from the cache" if cached else "made with debootstrap"
        if log is not None:
            log.append(f"{stand_in.names[0]}: {how} in {time.monotonic() - started:.0f} s")


def main() -> None:
    with docker_engine() as engine:
        if engine.started_here:
            raise SystemExit("no Docker engine answers at DOCKER_HOST: start one, then run this again")
        log: list[str] = []
        provide(engine, log)
        print("\n".join(log) or "every stand-in image is already in the engine")


if __name__ == "__main__":
    main()
