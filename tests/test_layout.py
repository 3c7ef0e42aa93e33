"""The layout's rules, checked on the source: one installed package; Airflow imported only
by its provider layer and the DAG files; CuPy only by the device layer; the environment
read only by the settings module."""
import ast
import glob
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = sorted((ROOT / "proofflow").rglob("*.py")) + sorted((ROOT / "dags").glob("*.py"))


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _imports(path: Path) -> set[str]:
    """Top-level names of every module a file imports (at module level or inside functions)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module.split(".")[0])
    return out


def test_the_product_files_are_found():
    assert len(PRODUCT) > 60 and (ROOT / "proofflow" / "prover" / "pipeline.py") in PRODUCT


def test_only_the_provider_layer_and_the_dags_import_airflow():
    offenders = [_rel(p) for p in PRODUCT if "airflow" in _imports(p)
                 and not _rel(p).startswith(("proofflow/airflow/", "dags/"))]
    assert offenders == []


def test_only_the_device_layer_imports_cupy():
    offenders = [_rel(p) for p in PRODUCT if "cupy" in _imports(p) and not _rel(p).startswith("proofflow/prover/device/")]
    assert offenders == []


def _reads_environment(path: Path) -> list[int]:
    lines = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "environb") and \
                isinstance(node.value, ast.Name) and node.value.id == "os":
            lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module == "os" and \
                {a.name for a in node.names} & {"environ", "getenv", "environb"}:
            lines.append(node.lineno)
    return lines


def test_only_settings_reads_the_environment():
    offenders = {_rel(p): lines for p in PRODUCT if (lines := _reads_environment(p)) and
                 _rel(p) != "proofflow/settings.py"}
    assert offenders == {}
    assert _reads_environment(ROOT / "proofflow" / "settings.py"), "the scan must see settings' own reads"


@pytest.mark.slow
def test_pip_install_installs_only_proofflow(tmp_path):
    """The wheel `pip install .` installs: the proofflow package (with its kernels' sources
    and the timing store's migrations) and its metadata, nothing else at the top level."""
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w", str(tmp_path)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    (wheel,) = glob.glob(str(tmp_path / "proofflow-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names} == {"proofflow", f"{Path(wheel).name.split('-')[0]}-"
                                                f"{Path(wheel).name.split('-')[1]}.dist-info"}
    for data in ("proofflow/prover/device/msm.cu", "proofflow/prover/device/fr.cuh", "proofflow/prover/native/fr.c", "proofflow/prover/circom/fq_montgomery.c",
                 "proofflow/timing/migrations/versions/0001_initial.py", "proofflow/timing/migrations/script.py.mako"):
        assert data in names, data
    entry = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "proofflow = proofflow.cli:main" in entry and "proofflow.airflow.plugins.plugin:ProofflowPlugin" in entry
    assert "provider_info = proofflow.airflow.get_provider_info:get_provider_info" in entry
