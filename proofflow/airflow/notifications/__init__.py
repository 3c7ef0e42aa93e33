"""Notifications (Airflow notifiers): the run state in the timing store, and the H2D alerts by email and webhook."""
