"""Fixtures of the Airflow tests: the local SMTP server and webhook receiver the alert tests
deliver to (tests/helpers/alert_receivers.py)."""
from alert_receivers import smtp_server, webhook_receiver  # noqa: F401 (fixtures, found by pytest here)
