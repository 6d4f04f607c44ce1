"""Every fixture case of the repository, replayed through the package, against what the
`toolwire replay` CLI prints for the same file and options (the CLI's output is the contract;
the goldens are checked by the Rust tests against the same code path)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest

import toolwire

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    tomllib = pytest.importorskip("tomli")

from conftest import ROOT

FIXTURES = ROOT / "fixtures"
RESPONSES = sorted(p for p in FIXTURES.glob("*/*/response.*"))
SESSIONS = sorted(FIXTURES.glob("*/*/session.jsonl"))


def meta(case: Path) -> Dict[str, Any]:
    path = case / "meta.toml"
    if not path.exists():
        return {}
    with path.open("rb") as f:
        return tomllib.load(f)


def same(a: Any, b: Any) -> bool:
    """Equal values with keys in the same order."""
    return json.dumps(a, ensure_ascii=False) == json.dumps(b, ensure_ascii=False)


def run_cli(cli: Path, args: List[str]) -> Tuple[int, str, str]:
    p = subprocess.run([str(cli), *args], capture_output=True, text=True, cwd=ROOT)
    return p.returncode, p.stdout, p.stderr


def test_the_corpus_is_there() -> None:
    assert len(RESPONSES) > 200, RESPONSES
    assert len(SESSIONS) > 40, SESSIONS
    assert {p.suffix for p in RESPONSES} >= {".sse", ".json", ".ndjson", ".eventstream"}


def test_every_http_case_replays_as_the_cli_prints(cli: Path) -> None:
    checked = 0
    failures: List[str] = []
    for body_path in RESPONSES:
        case = body_path.parent
        provider = case.parent.name
        m = meta(case)
        args = ["replay", "--provider", provider]
        kwargs: Dict[str, Any] = {}
        base_url: Optional[str] = m.get("base_url")
        if base_url:
            args += ["--base-url", base_url]
        if "status" in m:
            args += ["--status", str(m["status"])]
            kwargs["status"] = m["status"]
        request = case / "request.json"
        if request.exists():
            args += ["--request", str(request)]
            kwargs["request"] = json.loads(request.read_text())
        args.append(str(body_path))
        code, stdout, stderr = run_cli(cli, args)
        body = body_path.read_bytes()
        name = f"{provider}/{case.name}"
        try:
            got: Optional[Dict[str, Any]] = dict(toolwire.replay(provider, body, base_url, **kwargs))
            error: Optional[toolwire.ToolwireError] = None
        except toolwire.ToolwireError as e:
            got, error = None, e
        if code == 0:
            if error is not None:
                failures.append(f"{name}: the CLI succeeded, the package raised {error!r}")
            elif not same(json.loads(stdout), got):
                failures.append(f"{name}: differs from the CLI\n{stdout}\n{json.dumps(got, indent=2)}")
        else:
            if error is None:
                failures.append(f"{name}: the CLI failed ({stderr.strip()}), the package returned {got}")
                continue
            # The error is the same error: its text is the CLI's line after the file name.
            if str(error) not in stderr:
                failures.append(f"{name}: error {str(error)!r} is not the CLI's {stderr.strip()!r}")
            printed = json.loads(stdout) if stdout.strip() else None
            if not same(printed, error.partial):
                failures.append(f"{name}: partial {error.partial} is not what the CLI printed {printed}")
        checked += 1
    assert not failures, "\n\n".join(failures[:10]) + f"\n({len(failures)} of {checked} differ)"
    assert checked == len(RESPONSES)


def test_every_realtime_session_replays_as_the_cli_prints(cli: Path) -> None:
    failures: List[str] = []
    for session in SESSIONS:
        provider = session.parent.parent.name
        name = f"{provider}/{session.parent.name}"
        code, stdout, _ = run_cli(cli, ["replay", "--provider", provider, str(session)])
        printed = [json.loads(line) for line in stdout.splitlines() if line.strip()]
        got = toolwire.replay_session(provider, session.read_bytes())
        if not same(printed, got["responses"]):
            failures.append(f"{name}: responses differ from the CLI's")
        cli_failed = code != 0
        if cli_failed != (bool(got["errors"]) or got["ended_mid_response"]):
            failures.append(f"{name}: the CLI exited {code}, the package says errors={got['errors']}")
        # The same session, fed in pieces to the incremental reader, gives the same summary.
        reader = toolwire.RealtimeReader(provider)
        data = session.read_bytes()
        for i in range(0, len(data), 97):
            reader.feed(data[i : i + 97])
        incremental = reader.finish()
        if not same(incremental, got):
            failures.append(f"{name}: RealtimeReader differs from replay_session\n{incremental}\n{got}")
        summary = case_summary(session.parent)
        if summary is not None:
            expected = dict(got)
            expected["responses"] = len(got["responses"])
            if json.loads(json.dumps(expected)) != summary:
                failures.append(f"{name}: summary differs from expected.json\n{expected}\n{summary}")
    assert not failures, "\n\n".join(failures[:10]) + f"\n({len(failures)} of {len(SESSIONS)} differ)"


def case_summary(case: Path) -> Optional[Dict[str, Any]]:
    path = case / "expected.json"
    if not path.exists():
        return None
    value = json.loads(path.read_text())
    return value if isinstance(value, dict) and "calls_ready" in value else None


@pytest.mark.parametrize("chunk", [1, 7, 4096])
def test_stream_reader_matches_replay_in_any_chunking(chunk: int) -> None:
    streams = [p for p in RESPONSES if p.suffix in (".sse", ".ndjson", ".eventstream")]
    assert len(streams) > 150
    for body_path in streams:
        case = body_path.parent
        provider = case.parent.name
        m = meta(case)
        if "status" in m:
            continue
        request_path = case / "request.json"
        request = json.loads(request_path.read_text()) if request_path.exists() else None
        body = body_path.read_bytes()
        try:
            whole_events, whole = toolwire.replay_events(provider, body, m.get("base_url"), request=request)
        except toolwire.ToolwireError:
            continue
        reader = toolwire.StreamReader(provider, m.get("base_url"), request=request)
        events: List[Any] = []
        for i in range(0, len(body), chunk):
            events += reader.feed(body[i : i + chunk])
        response = reader.finish()
        events += reader.take_events()
        assert same(response, whole), body_path
        assert same(events, whole_events), body_path


def test_every_request_encodes_as_the_cli_prints(cli: Path) -> None:
    requests = sorted(FIXTURES.glob("*/*/request.json"))
    assert len(requests) > 50
    failures: List[str] = []
    for request_path in requests:
        provider = request_path.parent.parent.name
        if provider in toolwire.realtime_providers():
            continue
        case = request_path.parent
        m = meta(case)
        streamed = m.get("stream")
        if streamed is None:
            streamed = any((case / f"response.{x}").exists() for x in ("sse", "ndjson", "eventstream"))
        args = ["encode", "--provider", provider, *(["--stream"] if streamed else []), str(request_path)]
        code, stdout, stderr = run_cli(cli, args)
        request = json.loads(request_path.read_text())
        try:
            got: Any = toolwire.encode(provider, request, stream=bool(streamed))
        except toolwire.ToolwireError as e:
            if code == 0 or str(e) not in stderr:
                failures.append(f"{case}: raised {e!r}; CLI exit {code}: {stderr.strip()}")
            continue
        if code != 0 or not same(json.loads(stdout), got):
            failures.append(f"{case}: differs from the CLI ({code}: {stderr.strip()})")
    assert not failures, "\n".join(failures[:10])
