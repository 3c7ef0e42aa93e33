-- Run once by the postgres image on an empty data directory (docker-compose.yml mounts it
-- into /docker-entrypoint-initdb.d): the timing store's database, beside Airflow's `airflow`.
CREATE DATABASE proofflow;
