"""The canonical JSON model as ``TypedDict``s: what every function takes and returns.

Field names are those of the Rust crate's serde forms (the same JSON ``toolwire replay`` prints
and ``toolwire encode`` reads). Every dict may carry more keys than listed: provider data that
must be echoed back rides along as extra fields.
"""

from __future__ import annotations

import sys
from typing import Any, Dict, List, Literal, Optional, Union

if sys.version_info >= (3, 11):
    from typing import NotRequired, TypedDict
else:  # pragma: no cover - exercised on older interpreters only
    from typing_extensions import NotRequired, TypedDict

JSON = Any
"""Any JSON value (dict, list, str, int, float, bool or None)."""


class ArgumentsError(TypedDict):
    kind: Literal["truncated", "malformed"]
    message: str


class ToolCall(TypedDict):
    id: str
    name: str
    raw_arguments: str
    arguments: NotRequired[Optional[Dict[str, JSON]]]
    error: NotRequired[Optional[ArgumentsError]]


class ToolDefinition(TypedDict):
    name: str
    description: str
    parameters: NotRequired[Dict[str, JSON]]
    strict: NotRequired[bool]


class Usage(TypedDict, total=False):
    input_tokens: int
    output_tokens: int
    reasoning_tokens: int
    cached_input_tokens: int


class ChatResponse(TypedDict):
    text: Optional[str]
    reasoning: Optional[str]
    tool_calls: List[ToolCall]
    finish_reason: str
    raw_finish_reason: NotRequired[Optional[str]]
    usage: NotRequired[Optional[Usage]]
    raw_usage: NotRequired[Optional[Dict[str, JSON]]]


class SystemMessage(TypedDict):
    role: Literal["system"]
    content: JSON


class UserMessage(TypedDict):
    role: Literal["user"]
    content: JSON


class AssistantMessage(TypedDict):
    role: Literal["assistant"]
    content: NotRequired[JSON]
    reasoning: NotRequired[Optional[str]]
    tool_calls: NotRequired[List[ToolCall]]


class ToolMessage(TypedDict):
    role: Literal["tool"]
    call_id: str
    name: str
    output: JSON
    is_error: NotRequired[bool]
    error: NotRequired[Optional[str]]


Message = Union[SystemMessage, UserMessage, AssistantMessage, ToolMessage]

ToolChoice = Union[Literal["auto", "none", "required"], Dict[str, str]]


class ChatRequest(TypedDict):
    model: str
    messages: List[Message]
    tools: NotRequired[List[ToolDefinition]]
    tool_choice: NotRequired[ToolChoice]
    parallel_tool_calls: NotRequired[bool]
    max_tokens: NotRequired[int]
    temperature: NotRequired[float]
    thinking: NotRequired[bool]
    text_calls: NotRequired[str]
    extra_body: NotRequired[Dict[str, JSON]]


class ToolResult(TypedDict):
    call_id: str
    name: str
    output: JSON
    is_error: NotRequired[bool]
    error: NotRequired[Optional[str]]
    content: NotRequired[List[Dict[str, JSON]]]


class StreamEvent(TypedDict, total=False):
    """One stream event; ``type`` is text_delta, reasoning_delta, tool_call_started,
    tool_call_delta, tool_call_complete, usage or finish (or tool_call_arguments from a
    ``StreamReader(partial_json=True)``)."""

    type: str
    text: str
    index: int
    id: Optional[str]
    name: str
    fragment: str
    call: ToolCall
    usage: Usage
    reason: str
    event: str
    pointer: str


class WireRequest(TypedDict):
    method: str
    path: str
    headers: Dict[str, str]
    body: Dict[str, JSON]
    downgrades: List[Dict[str, JSON]]


class SessionReplay(TypedDict):
    responses: List[ChatResponse]
    calls_ready: List[Dict[str, JSON]]
    errors: List[Dict[str, JSON]]
    cancelled: List[str]
    awaiting: List[str]
    ended_mid_response: bool
    stats: Dict[str, int]


class AgentEvent(TypedDict, total=False):
    """One agent event; ``type`` is model, tool_started, tool_progress, tool_summary,
    tool_finished, tool_denied, tool_rewritten, hook_failed, turn_done or stopped."""

    type: str
    event: StreamEvent
    call: ToolCall
    result: ToolResult
    results: List[ToolResult]
    response: ChatResponse
    turn: int
    message: str
    hook: str
    reason: str


class AgentOutcome(TypedDict):
    response: ChatResponse
    messages: List[Message]
    turns: int
    provider: str
    stopped: Optional[str]


class TurnReport(TypedDict):
    turn: int
    response: ChatResponse
    results: List[ToolResult]
    usage: Usage
    elapsed: float
    next: ChatRequest


class TextPiece(TypedDict, total=False):
    type: Literal["text", "start", "arguments", "end", "cut"]
    text: str
    name: str


class MockToolCall(TypedDict, total=False):
    id: str
    name: str
    arguments: Union[str, Dict[str, JSON]]


class MockReply(TypedDict, total=False):
    """A scripted mock answer: exactly one of the keys."""

    text: str
    tool_calls: List[MockToolCall]
    response: ChatResponse
    error: Dict[str, JSON]
