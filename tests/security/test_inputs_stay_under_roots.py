"""Finding 1: "Any readable `.json` on a worker is echoed into task logs." An `inputs` entry
could be any absolute path ending in .json, the witness reader repeated a value it could not
take with repr and no length limit (a mode-0600 Docker config.json's auth token appeared in a
run log), and proof_batch's pending files reached any path through `..` or an absolute path.

Now a run reads input files only under the input roots (PROOFFLOW_INPUT_ROOTS, default
$PROOFFLOW_HOME/inputs, plus the pending directory for the work proof_batch claims), their
real paths checked, at validation and again where the engine reads them; errors name a
value only by its signal, type and length; `proofflow run --inputs` links or copies the
user's files into the first root for the run; pending inputs stay inside the pending
directory. The circuit here is a registered record without its files: every refusal comes
before they would be read."""
from __future__ import annotations

import json
import logging
import os
import re

import pytest

TOKEN = "c2VjcmV0LXRva2VuLW9mLWFub3RoZXItdXNlcg"  # what must never reach a message or a log


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A proofflow home with circuit `leaky` registered (its record only: wasm, one public
    input) and the default input roots."""
    home = tmp_path / "home"
    monkeypatch.setenv("PROOFFLOW_HOME", str(home))
    for var in ("PROOFFLOW_INPUT_ROOTS", "PROOFFLOW_PENDING", "PROOFFLOW_CIRCUITS"):
        monkeypatch.delenv(var, raising=False)
    (home / "circuits" / "leaky").mkdir(parents=True)
    (home / "circuits" / "leaky" / "circuit.json").write_text(json.dumps(
        {"format": "proofflow-circuit/1", "name": "leaky", "curve": "bls12_381", "log2": 8, "constraints": 3,
         "signals": 4, "public": 1, "wasm": True, "files": {"r1cs": {"sha256": "0" * 64}}}))
    (home / "inputs").mkdir()
    return home


@pytest.fixture
def secret(tmp_path):
    """Another program's credentials, readable by the worker's user alone, outside the roots."""
    path = tmp_path / "elsewhere" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"auths": {"registry.example.com": {"auth": TOKEN}}}))
    path.chmod(0o600)
    return path


def _validate(inputs, **kwargs):
    from proofflow.spec import validate_params
    return validate_params({"circuit": "leaky", "inputs": inputs, "backend": "cpu"}, gpu_available=lambda: False,
                           **kwargs)


def _refused_by_the_engine(path, caplog) -> str:
    """The message of the engine's refusal to read ``path`` as a partition's input (a config
    that never went through validate), with nothing of the file in the logs."""
    from proofflow.prover.circuits.by_name import get_circuit
    with caplog.at_level(logging.DEBUG), pytest.raises(ValueError) as exc:
        get_circuit("leaky", 8).instance(0, 0, input=str(path))
    assert TOKEN not in caplog.text
    return str(exc.value)


def test_an_input_outside_the_roots_is_refused_and_never_read(home, secret, caplog, capsys):
    from proofflow.spec import InvalidParams
    with pytest.raises(InvalidParams, match="outside the input roots") as exc:
        _validate([str(secret)])
    assert str(home / "inputs") in str(exc.value) and str(home / "pending") in str(exc.value)
    message = _refused_by_the_engine(secret, caplog)
    assert "outside the input roots" in message and str(home / "inputs") in message
    out = capsys.readouterr()
    assert TOKEN not in str(exc.value) + message + out.out + out.err


def test_links_and_dotdot_are_resolved_before_the_roots_are_checked(home, secret, caplog):
    from proofflow.spec import InvalidParams
    link = home / "inputs" / "looks-inside.json"
    link.symlink_to(secret)
    linked_dir = home / "inputs" / "batch"
    linked_dir.mkdir()
    (linked_dir / "p0.json").symlink_to(secret)
    climbing = home / "inputs" / ".." / ".." / "elsewhere" / "config.json"
    for inputs in ([str(link)], [str(climbing)], str(linked_dir), str(home / "inputs" / ".." / "..")):
        with pytest.raises(InvalidParams, match="outside the input roots"):
            _validate(inputs)
    for path in (link, climbing, linked_dir / "p0.json"):
        assert "outside the input roots" in _refused_by_the_engine(path, caplog)


def test_the_roots_are_configurable(home, secret, monkeypatch, tmp_path):
    from proofflow import settings
    from proofflow.spec import InvalidParams
    monkeypatch.setenv("PROOFFLOW_INPUT_ROOTS", f"{tmp_path / 'a'}:{secret.parent}")
    assert settings.current().input_roots == (tmp_path / "a", secret.parent)
    assert _validate([str(secret)]).inputs == (str(secret),)
    monkeypatch.setenv("PROOFFLOW_INPUT_ROOTS", str(tmp_path / "a"))
    with pytest.raises(InvalidParams, match=re.escape(f"outside the input roots ({tmp_path / 'a'}, ")):
        _validate([str(secret)])
    monkeypatch.setenv("PROOFFLOW_INPUT_ROOTS", "relative/inputs")
    with pytest.raises(ValueError, match="PROOFFLOW_INPUT_ROOTS must be absolute paths"):
        settings.current()


@pytest.mark.parametrize("document, shown", [
    ({"a": (TOKEN * 60)[:2048]}, "input signal 'a': expected an integer"),
    ({"a": [1, {"auth": TOKEN}]}, "input signal 'a[1]': expected an integer"),
    ({"https://registry.example.com/v1/": {"auth": TOKEN}}, "input signal '<a name of 32 characters>'"),
])
def test_a_value_the_reader_cannot_take_is_named_by_its_type_and_length(home, caplog, document, shown):
    """A file inside the roots (a user's own) is read; what it holds that is not an input is
    described, never quoted: not the value, and not a key that cannot be a signal's name."""
    from proofflow.prover.circom.errors import InputRejected
    from proofflow.prover.circuits.by_name import get_circuit
    path = home / "inputs" / "p0.json"
    path.write_text(json.dumps(document))
    with caplog.at_level(logging.DEBUG), pytest.raises(InputRejected) as exc:
        get_circuit("leaky", 8).instance(0, 0, input=str(path))
    message = str(exc.value)
    assert shown in message and TOKEN not in message and "registry.example" not in message
    assert ("a string of 2048 characters" if "'a'" in shown else "an object of 1 member") in message
    assert TOKEN not in caplog.text


def test_run_inputs_are_linked_into_the_first_root_for_the_run(home, secret, monkeypatch, tmp_path, capsys):
    """`proofflow run --inputs` takes files from anywhere the user may read: they are linked
    (or copied) into a fresh directory of the first root, in their order, which validates,
    and removed after the run; a file that is no input is refused before anything is made."""
    from proofflow import cli
    mine = tmp_path / "mine"
    mine.mkdir()
    for name in ("b.json", "a.json"):
        (mine / name).write_text('{"x": "1"}')
    seen = []

    def run(conf, args, as_given=None):  # the embedded Airflow run, replaced: the staged inputs as it gets them
        from proofflow.spec import validate_params
        config = validate_params(conf, gpu_available=lambda: False)
        seen.append([(path, open(path).read()) for path in config.inputs])
        return cli.EXIT_OK
    monkeypatch.setattr(cli, "_run", run)
    assert cli.main(["run", "--circuit", "leaky", "--inputs", str(mine / "b.json"), str(mine / "a.json")]) == 0
    assert cli.main(["run", "--circuit", "leaky", "--inputs", str(mine)]) == 0
    first, second = seen
    assert [p.startswith(str(home / "inputs") + os.sep) for p, _ in first + second] == [True] * 4
    assert [os.path.basename(p) for p, _ in first] == ["0000-b.json", "0001-a.json"]  # the order given
    assert [os.path.basename(p) for p, _ in second] == ["0000-a.json", "0001-b.json"]  # a directory's: by name
    assert list((home / "inputs").iterdir()) == [], "the run's copies outlived it"
    (mine / "notes.txt").write_text("not an input")
    assert cli.main(["run", "--circuit", "leaky", "--inputs", str(mine / "notes.txt")]) == cli.EXIT_BAD_INPUT
    assert "--inputs" in capsys.readouterr().err and list((home / "inputs").iterdir()) == []


def test_pending_inputs_stay_inside_the_pending_directory(home, secret):
    """`..`, absolute paths and links out of the pending directory are rejected with the
    reason; inputs inside it are claimed, and proof_run's validate takes them again."""
    from proofflow import settings
    from proofflow.airflow.pending import claim
    from proofflow.spec import validate_params
    d = settings.current().pending_dir
    (d / "in").mkdir(parents=True)
    (d / "in" / "p0.json").write_text('{"x": "1"}')
    (d / "in" / "out.json").symlink_to(secret)
    (d / "away").symlink_to(secret.parent, target_is_directory=True)
    jobs = {"dotdot": ["../../elsewhere/config.json"], "absolute": [str(secret)], "link": ["in/out.json"],
            "linked-dir": "away", "dir-link-file": ["away/config.json"], "good": ["in/p0.json"]}
    for name, inputs in jobs.items():
        (d / f"{name}.json").write_text(json.dumps({"circuit": "leaky", "inputs": inputs}))
    (d / "work-link.json").symlink_to(secret)
    claimed = claim()
    assert claimed == [{"circuit": "leaky", "inputs": [str(d / "in" / "p0.json")]}]
    assert validate_params(claimed[0], gpu_available=lambda: False).inputs == (str(d / "in" / "p0.json"),)
    rejected = {p.name.removesuffix(".json.error"): p.read_text() for p in (d / "rejected").glob("*.error")}
    assert sorted(rejected) == sorted(set(jobs) - {"good"} | {"work-link"})
    for name in ("dotdot", "absolute"):
        assert "must be relative to the pending directory, without '..'" in rejected[name]
    for name in ("link", "linked-dir", "dir-link-file"):
        assert f"outside the input roots ({d};" in rejected[name]
    assert "not a link" in rejected["work-link"]
    assert TOKEN not in "".join(rejected.values())
