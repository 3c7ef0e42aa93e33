"""The proofflow Airflow plugin: the run report as a tab of every dag run."""
