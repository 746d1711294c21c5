#!/bin/sh
# One PostgreSQL role per Phalanx service (docs/security.md), run by the postgres image when its
# data volume is first initialised. Migration 0004 grants each role its tables; the migrator owns
# the database, so migrations run as their own role and own every table.
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" <<SQL
CREATE ROLE phalanx_migrator LOGIN PASSWORD '${PHALANX_MIGRATOR_DB_PASSWORD}';
CREATE ROLE phalanx_scheduler LOGIN PASSWORD '${PHALANX_SCHEDULER_DB_PASSWORD}';
CREATE ROLE phalanx_controller LOGIN PASSWORD '${PHALANX_CONTROLLER_DB_PASSWORD}';
CREATE ROLE phalanx_admission LOGIN PASSWORD '${PHALANX_ADMISSION_DB_PASSWORD}';
CREATE ROLE phalanx_watcher LOGIN PASSWORD '${PHALANX_WATCHER_DB_PASSWORD}';
CREATE ROLE phalanx_reader LOGIN PASSWORD '${PHALANX_READER_DB_PASSWORD}';
ALTER DATABASE "${POSTGRES_DB}" OWNER TO phalanx_migrator;
SQL
