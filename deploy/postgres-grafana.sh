#!/usr/bin/env bash
# Run once by the postgres image on an empty data directory (docker-compose.yml mounts it into
# /docker-entrypoint-initdb.d, after postgres-init.sql): grafana_reader, Grafana's role on the
# timing store, which may read it and nothing else: Grafana runs whatever SQL its editors
# type. Its tables and views are created later, by POSTGRES_USER (proofflow setup's
# migrations), and are readable by grafana_reader as they are created.
set -euo pipefail
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname proofflow \
    -v pw="$GRAFANA_DB_PASSWORD" -v owner="$POSTGRES_USER" <<'SQL'
CREATE ROLE grafana_reader LOGIN PASSWORD :'pw';
GRANT CONNECT ON DATABASE proofflow TO grafana_reader;
GRANT USAGE ON SCHEMA public TO grafana_reader;
ALTER DEFAULT PRIVILEGES FOR ROLE :"owner" IN SCHEMA public GRANT SELECT ON TABLES TO grafana_reader;
SQL
