"""The stubs and the package type-check (mypy, strict), with a usage file that must pass and a
misuse file that must fail (so the stubs really constrain)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

PY = ROOT / "python"


def mypy(*args: str) -> "subprocess.CompletedProcess[str]":
    pytest.importorskip("mypy", reason="mypy is installed by .ci/run (pip install mypy)")
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", *args],
        capture_output=True,
        text=True,
        cwd=PY,
    )


def test_the_package_and_examples_type_check() -> None:
    p = mypy("--strict", "toolwire", "examples", "tests/typecheck_usage.py")
    assert p.returncode == 0, p.stdout + p.stderr


def test_misuse_is_caught(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import toolwire\n"
        "r = toolwire.replay('openai', b'')\n"
        "n: int = r['text']\n"  # text is Optional[str]
        "toolwire.encode('openai', {'model': 'm', 'messages': []}, stream='yes')\n"
    )
    p = mypy("--strict", str(bad))
    assert p.returncode != 0
    assert "bad.py:3" in p.stdout and "bad.py:4" in p.stdout, p.stdout
