"""Shared fixtures: the repository root and the `toolwire` CLI whose output is the contract."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Iterator

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _cli_path() -> Path:
    given = os.environ.get("TOOLWIRE_BIN")
    if given:
        return Path(given)
    cargo = shutil.which("cargo")
    if cargo is None:
        pytest.skip("no cargo to build the toolwire CLI (set TOOLWIRE_BIN)")
    # `--features full`: the build `cargo test --features full` made already, so nothing rebuilds
    # after the README's test command.
    subprocess.run(
        [cargo, "build", "--quiet", "--features", "full", "--bin", "toolwire"],
        cwd=ROOT,
        check=True,
    )
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    return target / "debug" / "toolwire"


@pytest.fixture(scope="session")
def cli() -> Iterator[Path]:
    path = _cli_path()
    assert path.exists(), f"{path} was not built"
    yield path


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT
