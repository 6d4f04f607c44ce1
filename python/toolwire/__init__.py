"""toolwire for Python: LLM tool calling that works the same on every provider.

The sans-IO core (``encode``, ``decode``, ``replay``, ``StreamReader``, ``RealtimeReader``,
``PartialJson``, ``parse_text_calls``, ``schema``) and the asyncio side (``Client``,
``ToolRegistry``, ``Agent``, ``MockServer``) are the Rust crate's, compiled in; canonical JSON
is plain dicts (see ``toolwire.types``). Rust work runs with the GIL released.

Quick start::

    import toolwire
    body = toolwire.encode("anthropic", {"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    response = toolwire.replay("openai", open("response.sse", "rb").read())
"""

from __future__ import annotations

import atexit
import inspect
import re
import time
import typing
from typing import Any, Callable, Dict, List, Optional, Tuple, TypeVar, Union, overload

from . import types
from ._toolwire import (
    Agent,
    AgentRun,
    ApiError,
    ArgumentTracker,
    ChatStream,
    Client,
    DecodeError,
    InputError,
    MaxTurnsError,
    McpError,
    MockServer,
    PartialJson,
    RealtimeReader,
    StreamError,
    StreamReader,
    TextCallReader,
    TimeoutError,
    ToolwireError,
    TransportError,
    UnsupportedError,
    __version__,
    decode,
    encode,
    encode_request,
    parse_text_calls,
    providers,
    realtime_providers,
    replay,
    replay_events,
    replay_session,
    schema,
)
from ._toolwire import ToolRegistry as _NativeRegistry

__all__ = [
    "Agent",
    "AgentRun",
    "ApiError",
    "ArgumentTracker",
    "ChatStream",
    "Client",
    "DecodeError",
    "InputError",
    "MaxTurnsError",
    "McpError",
    "MockServer",
    "PartialJson",
    "RealtimeReader",
    "StreamError",
    "StreamReader",
    "TextCallReader",
    "TimeoutError",
    "ToolRegistry",
    "ToolwireError",
    "TransportError",
    "UnsupportedError",
    "__version__",
    "decode",
    "encode",
    "encode_request",
    "parameters_of",
    "parse_text_calls",
    "providers",
    "realtime_providers",
    "replay",
    "replay_events",
    "replay_session",
    "schema",
    "types",
]

F = TypeVar("F", bound=Callable[..., Any])

_SCALARS: Dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _schema_of(annotation: Any) -> Tuple[Dict[str, Any], bool]:
    """The JSON Schema of a parameter annotation, and whether it admits None."""
    if annotation is inspect.Parameter.empty or annotation is Any:
        return {}, False
    if annotation in _SCALARS:
        return {"type": _SCALARS[annotation]}, False
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is Union:
        rest = [a for a in args if a is not type(None)]
        optional = len(rest) < len(args)
        if len(rest) == 1:
            inner, _ = _schema_of(rest[0])
            return inner, optional
        return {"anyOf": [_schema_of(a)[0] for a in rest]}, optional
    if origin is typing.Literal:
        return {"enum": list(args)}, False
    if annotation is list or origin in (list, List):
        return ({"type": "array", "items": _schema_of(args[0])[0]} if args else {"type": "array"}), False
    if annotation is dict or origin in (dict, Dict):
        return {"type": "object"}, False
    return {}, False


_ARG_LINE = re.compile(r"^\s{2,}(\w+)(?:\s*\([^)]*\))?\s*:\s*(.+)$")


def _doc_parts(fn: Callable[..., Any]) -> Tuple[str, Dict[str, str]]:
    """The docstring's summary and its Google-style ``Args:`` descriptions."""
    doc = inspect.getdoc(fn) or ""
    summary_lines: List[str] = []
    params: Dict[str, str] = {}
    section = "summary"
    for line in doc.splitlines():
        stripped = line.strip()
        if stripped in ("Args:", "Arguments:", "Parameters:"):
            section = "args"
            continue
        if stripped.endswith(":") and stripped[:-1] in ("Returns", "Raises", "Yields", "Examples"):
            section = "other"
            continue
        if section == "summary":
            if not stripped and summary_lines:
                section = "body"
            elif stripped:
                summary_lines.append(stripped)
        elif section == "args":
            m = _ARG_LINE.match("  " + line if not line.startswith("  ") else line)
            if m:
                params[m.group(1)] = m.group(2).strip()
    return " ".join(summary_lines), params


def parameters_of(fn: Callable[..., Any]) -> Dict[str, Any]:
    """A JSON Schema object for ``fn``'s keyword parameters, from its annotations and its
    docstring's ``Args:`` section. Parameters without a default are required."""
    hints = typing.get_type_hints(fn)
    _, described = _doc_parts(fn)
    properties: Dict[str, Any] = {}
    required: List[str] = []
    for name, p in inspect.signature(fn).parameters.items():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        schema_, optional = _schema_of(hints.get(name, p.annotation))
        if name in described:
            schema_ = {**schema_, "description": described[name]}
        properties[name] = schema_
        if p.default is p.empty and not optional:
            required.append(name)
    out: Dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        out["required"] = required
    return out


class ToolRegistry(_NativeRegistry):
    """Tools whose handlers are Python callables, sync or async.

    ``register(name, description, parameters, handler)`` takes a handler called with the
    arguments dict; ``add(fn)`` and the ``@registry.tool`` decorator take a plain function
    called with keyword arguments, its schema derived from its annotations and docstring.
    Arguments are checked against the schema before a handler runs; each call has a timeout.
    """

    def add(
        self,
        fn: Callable[..., Any],
        *,
        name: Optional[str] = None,
        description: Optional[str] = None,
        parameters: Optional[Dict[str, Any]] = None,
        timeout: Optional[float] = None,
        source: Optional[str] = None,
    ) -> None:
        """Registers ``fn`` as a tool named ``name`` (default: the function's name)."""
        summary, _ = _doc_parts(fn)
        schema_ = parameters if parameters is not None else parameters_of(fn)

        def handler(arguments: Dict[str, Any]) -> Any:
            return fn(**arguments)

        self.register(
            name or fn.__name__,
            description if description is not None else summary,
            schema_,
            handler,
            timeout=timeout,
            source=source,
        )

    @overload
    def tool(self, fn: F) -> F: ...

    @overload
    def tool(
        self,
        fn: None = None,
        *,
        name: Optional[str] = None,
        description: Optional[str] = None,
        parameters: Optional[Dict[str, Any]] = None,
        timeout: Optional[float] = None,
        source: Optional[str] = None,
    ) -> Callable[[F], F]: ...

    def tool(
        self,
        fn: Optional[F] = None,
        *,
        name: Optional[str] = None,
        description: Optional[str] = None,
        parameters: Optional[Dict[str, Any]] = None,
        timeout: Optional[float] = None,
        source: Optional[str] = None,
    ) -> Union[F, Callable[[F], F]]:
        """Decorator: ``@registry.tool`` or ``@registry.tool(name=..., timeout=...)``."""

        def wrap(f: F) -> F:
            self.add(f, name=name, description=description, parameters=parameters, timeout=timeout, source=source)
            return f

        if fn is not None:
            return wrap(fn)
        return wrap


@atexit.register
def _settle_background_threads() -> None:
    """Gives the native side's completion threads the GIL once more before the interpreter
    finalizes.

    An awaited native call is completed from a Tokio blocking thread: it hands the result to
    the event loop (``call_soon_threadsafe``, which releases the GIL while it wakes the loop)
    and then, holding the GIL again, drops its last references. When the awaited call was the
    program's last, the main thread can reach finalization in that gap; the thread then runs
    beside the finalizing garbage collector and the process dies (SIGSEGV or abort) after all
    its work is done. Seen under load in about one run in four of a script ending right after
    an agent run. Sleeping releases the GIL so such a thread finishes first.
    """
    time.sleep(0.05)
