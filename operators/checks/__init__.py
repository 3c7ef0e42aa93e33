"""Data-quality checks on proof runs (Great Expectations 1.x): ``check_h2d`` validates a run's
H2D transfers against the host's calibrated rate and the sanity of its timing rows."""
from operators.checks.h2d import CHECK_NAME, H2DCheckConfig, check_run, report_dir

__all__ = ["CHECK_NAME", "H2DCheckConfig", "check_run", "report_dir"]
