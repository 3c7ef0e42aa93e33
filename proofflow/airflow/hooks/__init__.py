"""Hooks: the timing store and the Airflow REST API, each from one Airflow connection."""
