"""N.E.K.O.'s plugin-side ``@llm_tool`` registration, ported to toolwire.

N.E.K.O. (github.com/Project-N-E-K-O/N.E.K.O) lets a plugin mark methods with
``@llm_tool(name=None, description="", parameters=None, timeout=30.0, role=None)``; at startup the
plugin base collects the marked methods and registers each with the main server, which calls
them back over HTTP with the parsed arguments as keyword arguments. A handler may return a plain
value or an error envelope ``{"output": ..., "is_error": true, "error": "..."}``.

Here the same decorator and collection feed a ``toolwire.ToolRegistry`` in-process: toolwire
checks the name rule and the arguments against the schema, enforces the timeout, and the agent
loop runs the calls on any provider. Run it: ``python python/examples/neko_llm_tool.py``
(offline: the model is toolwire's loopback mock).
"""

from __future__ import annotations

import asyncio
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, TypeVar

import toolwire

F = TypeVar("F", bound=Callable[..., Any])

META_ATTR = "__neko_llm_tool_meta__"


@dataclass(frozen=True)
class LlmToolMeta:
    """What ``@llm_tool`` records on a method (N.E.K.O.'s ``LlmToolMeta``)."""

    name: str
    description: str
    parameters: Dict[str, Any]
    timeout_seconds: float
    role: Optional[str]


def llm_tool(
    name: Optional[str] = None,
    description: str = "",
    parameters: Optional[Dict[str, Any]] = None,
    timeout: float = 30.0,
    role: Optional[str] = None,
) -> Callable[[F], F]:
    """Marks a plugin method as a tool the model may call (same signature as N.E.K.O.'s)."""
    if parameters is not None and not isinstance(parameters, dict):
        raise TypeError("parameters must be a dict (a JSON Schema object)")
    if timeout <= 0:
        raise ValueError("timeout must be greater than 0")

    def mark(fn: F) -> F:
        schema = parameters if parameters is not None else {"type": "object", "properties": {}}
        meta = LlmToolMeta(name or fn.__name__, description, schema, float(timeout), role)
        setattr(fn, META_ATTR, meta)
        return fn

    return mark


class ToolEnvelopeError(Exception):
    """A handler's error envelope, raised so the model sees an error result."""


def unwrap_envelope(value: Any) -> Any:
    """A handler's return value: an error envelope becomes an error result, anything else is
    the output."""
    if isinstance(value, dict) and value.get("is_error"):
        raise ToolEnvelopeError(str(value.get("error") or value.get("output") or "tool failed"))
    if isinstance(value, dict) and "output" in value and "images" in value:
        return value["output"]
    return value


@dataclass
class PluginBase:
    """Collects the ``@llm_tool`` methods of a plugin (N.E.K.O.'s ``collect_llm_tool_methods``:
    MRO order, each name once) and registers them, ``source = "plugin:<id>"``."""

    plugin_id: str
    registered: List[str] = field(default_factory=list)

    def collect_llm_tool_methods(self) -> List[Callable[..., Any]]:
        seen: set[str] = set()
        out: List[Callable[..., Any]] = []
        for klass in type(self).__mro__:
            for attr, value in vars(klass).items():
                meta = getattr(value, META_ATTR, None)
                if isinstance(meta, LlmToolMeta) and meta.name not in seen:
                    seen.add(meta.name)
                    out.append(getattr(self, attr))
        return out

    def register_tools(self, registry: toolwire.ToolRegistry) -> None:
        for method in self.collect_llm_tool_methods():
            meta: LlmToolMeta = getattr(method, META_ATTR)
            registry.register(
                meta.name,
                meta.description,
                meta.parameters,
                self._handler(method),
                timeout=meta.timeout_seconds,
                source=f"plugin:{self.plugin_id}",
            )
            self.registered.append(meta.name)

    @staticmethod
    def _handler(method: Callable[..., Any]) -> Callable[[Dict[str, Any]], Any]:
        if inspect.iscoroutinefunction(method):

            async def call_async(arguments: Dict[str, Any]) -> Any:
                return unwrap_envelope(await method(**arguments))

            return call_async

        def call(arguments: Dict[str, Any]) -> Any:
            return unwrap_envelope(method(**arguments))

        return call


class WeatherPlugin(PluginBase):
    """A plugin with one sync and one async tool, as a N.E.K.O. plugin would write them."""

    @llm_tool(
        description="Current weather of a city",
        parameters={
            "type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}},
            "required": ["city"],
        },
        timeout=5.0,
    )
    async def get_weather(self, city: str, unit: str = "c", **_: Any) -> Dict[str, Any]:
        await asyncio.sleep(0)
        if city.lower() == "atlantis":
            return {"output": None, "is_error": True, "error": f"no weather station in {city}"}
        return {"city": city, "temp": 21 if unit == "c" else 70, "unit": unit}

    @llm_tool(
        name="plugin.remember",
        description="Stores a note for later",
        parameters={"type": "object", "properties": {"note": {"type": "string"}}, "required": ["note"]},
    )
    def remember(self, note: str, **_: Any) -> str:
        return f"remembered: {note}"


async def main(provider: str = "openai") -> Dict[str, Any]:
    registry = toolwire.ToolRegistry()
    plugin = WeatherPlugin("weather")
    plugin.register_tools(registry)
    script: List[toolwire.types.MockReply] = [
        {
            "tool_calls": [
                {"id": "c1", "name": "get_weather", "arguments": {"city": "Kyoto"}},
                {"id": "c2", "name": "plugin.remember", "arguments": {"note": "umbrella"}},
                {"id": "c3", "name": "get_weather", "arguments": {"city": "Atlantis"}},
            ]
        },
        {"text": "Kyoto is at 21 °C; noted the umbrella; Atlantis has no station."},
    ]
    server = await toolwire.MockServer.start(provider, script)
    try:
        client = toolwire.Client(provider, base_url=server.url, api_key="mock")
        agent = toolwire.Agent(client, registry)
        run = agent.run({"model": "mock-model", "messages": [{"role": "user", "content": "Weather in Kyoto?"}]})
        results: Dict[str, Any] = {}
        async for event in run:
            if event["type"] == "tool_finished":
                result = event["result"]
                results[result["call_id"]] = result
                shown = result["error"] if result.get("is_error") else result["output"]
                print(f"[{provider}] {result['name']} -> {shown}")
        outcome = await run.finish()
    finally:
        server.close()
    print(f"[{provider}] {outcome['response']['text']}")
    return {"results": results, "outcome": outcome, "registered": plugin.registered}


if __name__ == "__main__":
    for wire in ("openai", "gemini", "glm"):
        asyncio.run(main(wire))
