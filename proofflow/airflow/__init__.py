"""proofflow's Airflow provider, laid out as Airflow's providers are: ``hooks`` (the only
place connections and the timing store are resolved), ``operators`` (one per proof-run
phase, each a thin adapter over ``proofflow.prover.pipeline``), ``notifications`` (run state,
H2D alerts), ``plugins`` (the run report in the UI), ``params`` (the trigger form) and
``get_provider_info`` (what Airflow's ProvidersManager reads through the entry point).
Importing a DAG file imports this layer's operators, never the engine: the heavy imports
happen inside ``execute``."""
