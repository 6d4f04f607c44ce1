"""The sans-IO core: errors, stream reading, partial JSON, text calls, schema lowering."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, List

import pytest

import toolwire
from conftest import ROOT

REQUEST = {
    "model": "m",
    "messages": [{"role": "user", "content": "Weather in Paris?"}],
    "tools": [
        {
            "name": "get_weather",
            "description": "Current weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        }
    ],
}


def sse_call(arguments: str, pieces: int) -> bytes:
    """An OpenAI Chat Completions stream whose one call's arguments come in `pieces` parts."""
    step = max(1, len(arguments) // pieces)
    out = [
        'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1",'
        '"type":"function","function":{"name":"get_weather","arguments":""}}]}}]}\n\n'
    ]
    for i in range(0, len(arguments), step):
        frag = json.dumps(arguments[i : i + step])
        out.append(
            'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":'
            + frag
            + "}}]}}]}\n\n"
        )
    out.append('data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}\n\ndata: [DONE]\n\n')
    return "".join(out).encode()


def test_providers_are_named_once() -> None:
    names = toolwire.providers()
    assert "openai" in names and "anthropic" in names and "bedrock" in names
    assert "openai-realtime" in toolwire.realtime_providers()
    assert not set(names) & set(toolwire.realtime_providers())


def test_encode_is_the_wire_body_and_encode_request_the_whole_request() -> None:
    body = toolwire.encode("anthropic", REQUEST)
    assert body["tools"][0]["input_schema"]["required"] == ["city"]
    full = toolwire.encode_request("anthropic", REQUEST, stream=True)
    assert full["method"] == "POST"
    assert full["body"]["stream"] is True
    assert full["path"].startswith("/")
    assert not any(k.lower() in ("authorization", "x-api-key") for k in full["headers"])


def test_decode_reads_a_json_body() -> None:
    body = {
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ]
    }
    r = toolwire.decode("openai", json.dumps(body).encode())
    assert r["tool_calls"][0]["arguments"] == {"city": "Paris"}
    assert r["finish_reason"] == "tool_calls"


def test_errors_mirror_the_rust_kinds() -> None:
    assert issubclass(toolwire.ApiError, toolwire.ToolwireError)
    assert issubclass(toolwire.InputError, toolwire.ToolwireError)
    with pytest.raises(toolwire.InputError) as bad:
        toolwire.encode("no-such-provider", REQUEST)
    assert bad.value.path == "provider"
    body = b'{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}'
    with pytest.raises(toolwire.ApiError) as api:
        toolwire.decode("openai", body, status=429)
    e = api.value
    assert (e.status, e.provider, e.code, e.kind) == (429, "openai", "rate_limit_exceeded", "api")
    assert e.message == "Rate limit reached"
    assert e.retryable
    with pytest.raises(toolwire.DecodeError) as dec:
        toolwire.replay("openai", b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: <html>\n\n")
    assert dec.value.partial is not None and dec.value.partial["text"] == "Hi"
    with pytest.raises(toolwire.InputError):
        toolwire.encode("openai", {"model": "m"})  # no messages
    with pytest.raises(TypeError):
        toolwire.encode("openai", {"model": "m", "messages": [], "x": object()})


def test_a_cut_stream_is_a_stream_error_keeping_the_call() -> None:
    body = sse_call('{"city": "Paris"}', 4)
    cut = body[: len(body) // 2]
    reader = toolwire.StreamReader("openai")
    reader.feed(cut)
    with pytest.raises(toolwire.StreamError) as e:
        reader.finish()
    assert e.value.kind == "stream" and e.value.provider == "openai"
    assert e.value.partial is not None
    call = e.value.partial["tool_calls"][0]
    assert call["error"] is not None and call["error"]["kind"] == "truncated"


def test_stream_reader_events_and_partial_json() -> None:
    reader = toolwire.StreamReader("openai", partial_json=True)
    events: List[Any] = []
    body = sse_call('{"city": "Paris", "days": [1, 2]}', 8)
    for i in range(0, len(body), 13):
        events += reader.feed(body[i : i + 13])
    response = reader.finish()
    events += reader.take_events()
    kinds = [e["type"] for e in events]
    assert kinds[0] == "tool_call_started"
    assert "tool_call_delta" in kinds and "tool_call_complete" in kinds and kinds[-1] == "finish"
    structure = [e for e in events if e["type"] == "tool_call_arguments"]
    assert any(e["event"] == "text" and e["pointer"] == "/city" for e in structure), structure
    assert response["tool_calls"][0]["arguments"] == {"city": "Paris", "days": [1, 2]}
    assert reader.received == len(body)


def test_stream_reader_limits_are_checked_as_data_arrives() -> None:
    reader = toolwire.StreamReader("openai", max_argument_bytes=100)
    with pytest.raises(toolwire.ToolwireError) as e:
        reader.feed(sse_call('{"x": "' + "a" * 1000 + '"}', 50))
    assert "100" in str(e.value) or "limit" in str(e.value)


def test_partial_json_reports_structure_as_text_arrives() -> None:
    p = toolwire.PartialJson()
    events = p.feed('{"city": "Par')
    assert events[0]["event"] == "started" and events[0]["pointer"] == ""
    assert any(e.get("pointer") == "/city" for e in events)
    events = p.feed('is"}')
    complete, _ = p.finish()
    assert complete and p.is_complete and p.invalid is None
    bad = toolwire.PartialJson()
    bad.feed('{"a": tru}')
    assert bad.invalid is not None


def test_text_calls_are_recovered() -> None:
    text = 'Let me check.<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
    pieces = toolwire.parse_text_calls(text, "hermes")
    assert pieces[0] == {"type": "text", "text": "Let me check."}
    assert {"type": "start", "name": "get_weather"} in pieces
    args = "".join(p["text"] for p in pieces if p["type"] == "arguments")
    assert json.loads(args) == {"city": "Paris"}
    assert pieces[-1]["type"] == "end"
    reader = toolwire.TextCallReader("auto")
    got = []
    for ch in text:
        got += reader.push(ch)
    got += reader.finish()
    assert any(p["type"] == "start" for p in got)
    # And inside a replay, as `toolwire replay --text-calls`.
    content = json.dumps(text)
    body = ('{"choices":[{"index":0,"message":{"role":"assistant","content":' + content + '},"finish_reason":"stop"}]}').encode()
    r = toolwire.replay("openai", body, text_calls="hermes")
    assert r["tool_calls"][0]["name"] == "get_weather"
    with pytest.raises(toolwire.InputError):
        toolwire.parse_text_calls(text, "no-such-format")


def test_schema_lowering_matches_the_cli(cli: Path, tmp_path: Path) -> None:
    params = {
        "type": "object",
        "properties": {"when": {"type": ["string", "null"], "format": "date-time"}, "n": {"type": "integer", "minimum": 1}},
        "required": ["when"],
        "additionalProperties": False,
    }
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(params))
    for provider in toolwire.providers():
        for strict in (False, True):
            args = [str(cli), "schema", "--provider", provider, *(["--strict"] if strict else []), str(path)]
            p = subprocess.run(args, capture_output=True, text=True, cwd=ROOT)
            try:
                got = toolwire.schema(provider, params, strict=strict)
            except toolwire.ToolwireError as e:
                assert p.returncode != 0 and str(e) in p.stderr, (provider, strict, p.stderr)
                continue
            assert p.returncode == 0, p.stderr
            assert json.dumps(json.loads(p.stdout)) == json.dumps(got), (provider, strict)


def test_the_gil_is_released_while_rust_reads() -> None:
    body = sse_call(json.dumps({"blob": "x" * 30_000_000}), 100_000)
    stamps: List[float] = []
    done = threading.Event()

    def tick() -> None:
        while not done.is_set():
            stamps.append(time.perf_counter())
            time.sleep(0.001)

    t = threading.Thread(target=tick)
    t.start()
    time.sleep(0.02)
    start = time.perf_counter()
    toolwire.replay("openai", body)
    end = time.perf_counter()
    done.set()
    t.join()
    # Held for the whole call, the GIL would keep the other thread from running at all inside
    # [start, end] (give or take one 5 ms switch interval at either edge).
    margin = 0.015
    assert end - start > 4 * margin, f"the replay took {end - start:.3f}s: too short to tell"
    inside = [s for s in stamps if start + margin < s < end - margin]
    assert len(inside) >= 3, (len(inside), end - start)
