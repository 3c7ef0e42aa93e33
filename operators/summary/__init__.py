"""A proof run's summary in the Airflow UI: the figures (``content``), the ``publish_summary``
task that writes them as the dag run's note through the REST API (``operator``, ``api``), and
the plugin that serves the full report and the timeline PNG as a tab of each dag run
(``plugin``)."""
