"""The asyncio side offline: a Python agent with two Python tools (one sync, one async) against
the loopback mock provider, on every wire; the registry's validation, timeouts and hooks."""

from __future__ import annotations

import asyncio
from typing import Any, Dict, List

import pytest

import toolwire

RUN: Dict[str, Any] = {"model": "mock-model", "messages": [{"role": "user", "content": "Weather in Paris, and 2 + 3?"}]}


def registry() -> toolwire.ToolRegistry:
    tools = toolwire.ToolRegistry()

    @tools.tool
    def add(a: float, b: float) -> Dict[str, float]:
        """Adds two numbers.

        Args:
            a: The first number.
            b: The second number.
        """
        return {"sum": a + b}

    @tools.tool(timeout=5)
    async def get_weather(city: str, unit: str = "celsius") -> Dict[str, Any]:
        """Current weather of a city."""
        await asyncio.sleep(0.01)
        return {"city": city, "temp": 21, "unit": unit}

    return tools


def script() -> List[Dict[str, Any]]:
    return [
        {
            "tool_calls": [
                {"id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}},
                {"id": "call_2", "name": "add", "arguments": {"a": 2, "b": 3}},
            ]
        },
        {"text": "Paris: 21 degrees; 2 + 3 = 5."},
    ]


async def run_on(provider: str) -> None:
    server = await toolwire.MockServer.start(provider, script())
    try:
        client = toolwire.Client(provider, base_url=server.url, api_key="test")
        agent = toolwire.Agent(client, registry())
        run = agent.run(RUN)
        finished: Dict[str, Any] = {}
        async for event in run:
            if event["type"] == "tool_finished":
                finished[event["result"]["name"]] = event["result"]
        outcome = await run.finish()
    finally:
        server.close()
    assert finished["add"]["output"] == {"sum": 5.0}, (provider, finished)
    assert finished["get_weather"]["output"] == {"city": "Paris", "temp": 21, "unit": "celsius"}, provider
    assert not finished["add"]["is_error"]
    assert outcome["response"]["text"] == "Paris: 21 degrees; 2 + 3 = 5.", provider
    assert outcome["turns"] == 2 and outcome["provider"] == provider
    roles = [m["role"] for m in outcome["messages"]]
    assert roles[:2] == ["user", "assistant"] and roles.count("tool") == 2, roles


@pytest.mark.parametrize("provider", toolwire.providers())
def test_a_python_agent_with_two_python_tools_runs_on_every_wire(provider: str) -> None:
    asyncio.run(run_on(provider))


def test_the_definitions_come_from_annotations_and_docstrings() -> None:
    defs = {d["name"]: d for d in registry().definitions()}
    add = defs["add"]
    assert add["description"] == "Adds two numbers."
    assert add["parameters"]["required"] == ["a", "b"]
    assert add["parameters"]["properties"]["a"] == {"type": "number", "description": "The first number."}
    assert defs["get_weather"]["parameters"]["required"] == ["city"]


async def dispatch(tools: toolwire.ToolRegistry, name: str, arguments: str) -> Any:
    return await tools.dispatch({"id": "c1", "name": name, "raw_arguments": arguments})


def test_arguments_are_validated_before_the_tool_runs() -> None:
    calls: List[Any] = []
    tools = toolwire.ToolRegistry()
    tools.register(
        "count",
        "counts",
        {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
        lambda args: calls.append(args) or {"ok": True},
    )
    bad = asyncio.run(dispatch(tools, "count", '{"n": "three"}'))
    assert bad["is_error"] and calls == []
    good = asyncio.run(dispatch(tools, "count", '{"n": 3}'))
    assert not good["is_error"] and good["output"] == {"ok": True} and calls == [{"n": 3}]


def test_a_slow_tool_times_out_and_an_exception_is_an_error_result() -> None:
    tools = toolwire.ToolRegistry()

    async def slow(args: Dict[str, Any]) -> str:
        await asyncio.sleep(5)
        return "late"

    def broken(args: Dict[str, Any]) -> None:
        raise ValueError("no such city")

    tools.register("slow", "sleeps", {"type": "object"}, slow, timeout=0.2)
    tools.register("broken", "raises", {"type": "object"}, broken)
    r = asyncio.run(dispatch(tools, "slow", "{}"))
    assert r["is_error"] and "tim" in (r["error"] or "").lower(), r
    r = asyncio.run(dispatch(tools, "broken", "{}"))
    assert r["is_error"] and "ValueError: no such city" in (r["error"] or ""), r


def test_hooks_deny_and_stop() -> None:
    async def go() -> Dict[str, Any]:
        server = await toolwire.MockServer.start("openai", script())
        seen: List[str] = []

        async def before(call: Dict[str, Any]) -> Any:
            seen.append(call["name"])
            return "weather is off limits" if call["name"] == "get_weather" else None

        def after(report: Dict[str, Any]) -> Any:
            return "continue"

        client = toolwire.Client("openai", base_url=server.url, api_key="k")
        agent = toolwire.Agent(client, registry(), before_tool=before, after_turn=after)
        run = agent.run(RUN)
        events = [e async for e in run]
        outcome = await run.finish()
        server.close()
        return {"events": events, "seen": seen, "outcome": outcome}

    r = asyncio.run(go())
    assert sorted(r["seen"]) == ["add", "get_weather"]
    denied = [e for e in r["events"] if e["type"] == "tool_denied"]
    assert denied and denied[0]["message"] == "weather is off limits"
    assert r["outcome"]["response"]["text"].startswith("Paris")

    async def stop() -> Dict[str, Any]:
        server = await toolwire.MockServer.start("openai", script())
        client = toolwire.Client("openai", base_url=server.url, api_key="k")
        agent = toolwire.Agent(client, registry(), after_turn=lambda report: "stop")
        outcome = await agent.run(RUN).finish()
        server.close()
        return outcome

    outcome = asyncio.run(stop())
    assert outcome["turns"] == 1 and outcome["stopped"] is not None


def test_client_chat_and_stream_against_the_mock() -> None:
    async def go() -> None:
        server = await toolwire.MockServer.start("anthropic", [{"text": "hello"}, {"text": "again"}])
        client = toolwire.Client("anthropic", base_url=server.url, api_key="k")
        r = await client.chat(RUN)
        assert r["text"] == "hello"
        stream = await client.stream(RUN)
        text = "".join([e["text"] async for e in stream if e["type"] == "text_delta"])
        assert text == "again"
        assert len(server.requests()) == 2
        server.close()

    asyncio.run(go())


def test_an_api_error_from_the_mock_is_raised_typed() -> None:
    async def go() -> None:
        server = await toolwire.MockServer.start("openai", [{"error": {"status": 400, "message": "bad tool schema", "code": "invalid_request_error"}}])
        client = toolwire.Client("openai", base_url=server.url, api_key="k")
        with pytest.raises(toolwire.ApiError) as e:
            await client.chat(RUN)
        assert e.value.status == 400 and "bad tool schema" in e.value.message
        server.close()

    asyncio.run(go())
