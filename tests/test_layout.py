"""The layout's rules, checked on the source: one installed package; Airflow imported only
by its provider layer and the DAG files; CuPy only by the device layer; the environment
read only by the settings module, and the settings not by the device layer (its callers
pass it typed options); no import cycles, and imports that follow the layers."""
import ast
import glob
import subprocess
import sys
import zipfile
from collections import deque
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


# -- the import graph ---------------------------------------------------------------------------
# Layers, lowest first: a module may import its own layer or lower ones. proofflow/__init__.py,
# the package face, sits below them all: anything may import it (its __version__), and it
# imports nothing of the product. phases.py, the vocabulary of the engine's timers and the
# timing store's views, is a contract like spec's domains, in spec's layer.
LAYERS = (("proofflow/__init__.py", 0), ("proofflow/settings.py", 1), ("proofflow/spec.py", 2),
          ("proofflow/phases.py", 2), ("proofflow/prover/", 3), ("proofflow/timing/", 4), ("proofflow/airflow/", 5),
          ("proofflow/cli.py", 6), ("dags/", 6))


def _layer(rel: str) -> int | None:
    for prefix, layer in LAYERS:
        if rel == prefix or (prefix.endswith("/") and rel.startswith(prefix)):
            return layer
    return None


def _module(rel: str) -> str:
    parts = rel.removesuffix(".py").split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path, files) -> dict[str, set[str]]:
    """Each file (path relative to ``root``) and the files it imports, at module level or
    inside functions; imports from outside ``files`` are left out. ``import a.b.c`` is an edge
    to a/b/c.py (or the longest part of it that is a module here); ``from a.b import n`` to
    a/b/n.py where that is a module, else to a/b; relative imports are resolved.

    Package faces: importing a.b.c runs a/__init__.py and a/b/__init__.py first, so the
    importer has an edge to each of them too, unless it lies inside that package (its
    children import each other while the package is already loading). So a face that
    imports its children makes no cycle with them, but one that imports what imports its
    children from outside (a selector of implementations that build on the package) does."""
    rels = [Path(f).relative_to(root).as_posix() for f in files]
    by_module = {_module(rel): rel for rel in rels}
    packages = {_module(rel) for rel in rels if rel.endswith("/__init__.py")}

    def known(name: str) -> str | None:  # the longest prefix of a dotted name that is a module here
        while name and name not in by_module:
            name = name.rpartition(".")[0]
        return name or None

    graph = {}
    for rel in rels:
        me = _module(rel)
        package = me if me in packages else me.rpartition(".")[0]
        targets = set()
        for node in ast.walk(ast.parse((root / rel).read_text(), rel)):
            if isinstance(node, ast.Import):
                targets |= {known(a.name) for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + [base] if base else anchor)
                targets |= {f"{base}.{a.name}" if f"{base}.{a.name}" in by_module else known(base) for a in node.names}
        targets.discard(None)
        for target in list(targets):
            outer = target.rpartition(".")[0]
            while outer:
                if outer in packages and not (me == outer or me.startswith(outer + ".")):
                    targets.add(outer)
                outer = outer.rpartition(".")[0]
        graph[rel] = {by_module[t] for t in targets if t != me}
    return graph


def _components(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one file (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while not component or component[-1] != v:
                component.append(stack.pop())
                on_stack.discard(component[-1])
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def cycles(graph: dict[str, set[str]]) -> list[str]:
    """One line per import cycle (a component of mutually importing files): its shortest
    loop through its first file, file -> file, then every file of the component."""
    lines = []
    for component in _components(graph):
        start, inside = component[0], set(component)
        came_from, queue = {}, deque([start])
        while start not in came_from:
            v = queue.popleft()
            for w in sorted(graph[v] & inside):
                if w not in came_from:
                    came_from[w] = v
                    queue.append(w)
        loop = [start]
        while len(loop) == 1 or loop[-1] != start:
            loop.append(came_from[loop[-1]])
        lines.append(" -> ".join(reversed(loop)) + f"  (the cycle's files: {', '.join(component)})")
    return lines


def upward(graph: dict[str, set[str]]) -> list[str]:
    """One line per import from a lower layer to a higher one: file (layer) -> file (layer).
    Files of no layer are left to ``test_every_product_file_has_a_layer``."""
    return [f"{a} ({_layer(a)}) -> {b} ({_layer(b)})" for a in sorted(graph) for b in sorted(graph[a])
            if None not in (_layer(a), _layer(b)) and _layer(b) > _layer(a)]


def test_every_product_file_has_a_layer():
    assert [_rel(p) for p in PRODUCT if _layer(_rel(p)) is None] == []


def test_the_product_has_no_import_cycle():
    """Counting imports inside functions, and package faces as ``import_graph`` says."""
    found = cycles(import_graph(ROOT, PRODUCT))
    assert not found, f"{len(found)} import cycle(s):\n" + "\n".join(found)


def test_the_device_layer_reads_no_settings():
    graph = import_graph(ROOT, PRODUCT)
    device = [rel for rel in graph if rel.startswith("proofflow/prover/device/")]
    assert len(device) > 5 and "proofflow/settings.py" in graph["proofflow/cli.py"]
    assert [rel for rel in device if "proofflow/settings.py" in graph[rel]] == []


def test_imports_follow_the_layers():
    found = upward(import_graph(ROOT, PRODUCT))
    assert not found, (f"{len(found)} import(s) from a lower layer to a higher one (settings 1, spec 2, prover 3, "
                       "timing 4, airflow 5, cli and dags 6):\n" + "\n".join(found))


def test_the_graph_walker_finds_cycles_and_upward_imports(tmp_path):
    """A synthetic product: settings imports spec inside a function (upward, and a cycle with
    spec's relative import of settings); a package face that re-exports its children makes
    no cycle; an import from outside a package reaches its face too."""
    sources = {
        "proofflow/__init__.py": "",
        "proofflow/settings.py": "def f():\n    import proofflow.spec\n",
        "proofflow/spec.py": "from . import settings\nimport numpy\n",
        "proofflow/prover/__init__.py": "from proofflow.prover.a import A\n",
        "proofflow/prover/a.py": "from proofflow.prover import b\nA = 1\n",
        "proofflow/prover/b.py": "from proofflow.spec import InvalidParams\n",
        "proofflow/timing/t.py": "from ..prover.a import A\n",
    }
    for rel, text in sources.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    graph = import_graph(tmp_path, sorted(tmp_path.rglob("*.py")))
    assert graph["proofflow/prover/b.py"] == {"proofflow/spec.py"}
    assert graph["proofflow/timing/t.py"] == {"proofflow/prover/a.py", "proofflow/prover/__init__.py"}
    assert cycles(graph) == ["proofflow/settings.py -> proofflow/spec.py -> proofflow/settings.py  (the cycle's files: "
                             "proofflow/settings.py, proofflow/spec.py)"]
    assert upward(graph) == ["proofflow/settings.py (1) -> proofflow/spec.py (2)"]


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
    assert "[airflow.policy]\nproofflow = proofflow.airflow.policy" in entry


def test_operators_are_thin():
    """Each operator's ``run``/``execute`` is a few lines over the engine: at most 30."""
    long = {}
    for path in sorted((ROOT / "proofflow" / "airflow" / "operators").glob("*.py")):
        for cls in (n for n in ast.parse(path.read_text()).body if isinstance(n, ast.ClassDef)):
            for fn in (n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name in ("run", "execute")):
                if fn.end_lineno - fn.lineno + 1 > 30:
                    long[f"{_rel(path)}:{cls.name}.{fn.name}"] = fn.end_lineno - fn.lineno + 1
    assert long == {}


def test_the_readme_is_a_front_door():
    """At most 250 lines; the depth lives in docs/."""
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 250 and all((ROOT / "docs" / name).is_file() for name in (
        "architecture.md", "configuration.md", "deployment.md", "sizing.md", "prover-service.md", "reliability.md"))
