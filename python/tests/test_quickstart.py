"""The Python quick start in docs/python.md runs as written, and so does the N.E.K.O. example."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from typing import Any, Dict

from conftest import ROOT


def test_the_quick_start_runs() -> None:
    text = (ROOT / "docs" / "python.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 4, "the quick start lost its code"
    namespace: Dict[str, Any] = {"__name__": "quickstart"}
    for block in blocks:
        exec(compile(block, "docs/python.md", "exec"), namespace)  # noqa: S102
    assert namespace["response"]["finish_reason"] == "tool_calls"


def test_the_neko_example_ports_llm_tool_registration() -> None:
    sys.path.insert(0, str(ROOT / "python" / "examples"))
    try:
        import neko_llm_tool as example
    finally:
        sys.path.pop(0)
    for provider in ("openai", "gemini", "glm", "anthropic"):
        got = asyncio.run(example.main(provider))
        results = got["results"]
        assert results["c1"]["output"] == {"city": "Kyoto", "temp": 21, "unit": "c"}
        assert results["c2"]["output"] == "remembered: umbrella"
        assert results["c3"]["is_error"] and "no weather station in Atlantis" in results["c3"]["error"]
        assert got["registered"] == ["get_weather", "plugin.remember"]
    # The decorator keeps N.E.K.O.'s checks.
    try:
        example.llm_tool(timeout=0)
    except ValueError:
        pass
    else:
        raise AssertionError("a zero timeout was accepted")


def test_the_example_runs_as_a_script() -> None:
    p = subprocess.run(
        [sys.executable, str(ROOT / "python" / "examples" / "neko_llm_tool.py")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    assert "[glm] get_weather -> {'city': 'Kyoto'" in p.stdout
