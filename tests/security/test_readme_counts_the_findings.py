"""The README's reliability table counts the security review's findings (issue 35) and the
tests that refuse them: every finding 1..8 has a module here whose docstring names it, and
the row's figures are what this folder holds."""
from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
README = HERE.parents[1] / "README.md"
FINDINGS = range(1, 9)


def _findings_named() -> set[int]:
    named = set()
    for module in HERE.glob("test_*.py"):
        doc = ast.get_docstring(ast.parse(module.read_text())) or ""
        named |= {int(n) for n in re.findall(r"^Findings? (\d+)", doc)}
    return named


def test_every_finding_has_a_module():
    assert _findings_named() == set(FINDINGS)


def test_the_readme_row_counts_the_findings_and_their_tests():
    (row,) = [line for line in README.read_text().splitlines() if line.startswith("| security review")]
    found = re.search(r"(\d+) of (\d+) findings refused, (\d+) tests", row)
    assert found, row
    collected = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                                str(HERE)], capture_output=True, text=True, timeout=120)
    tests = int(re.search(r"(\d+) tests? collected", collected.stdout).group(1))
    assert [int(g) for g in found.groups()] == [len(_findings_named()), len(FINDINGS), tests]
