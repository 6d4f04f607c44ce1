"""Type stubs of the compiled module (Rust, PyO3)."""

from typing import Any, Awaitable, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from .types import (
    AgentEvent,
    AgentOutcome,
    ChatRequest,
    ChatResponse,
    MockReply,
    SessionReplay,
    StreamEvent,
    TextPiece,
    ToolCall,
    ToolDefinition,
    ToolResult,
    TurnReport,
    WireRequest,
)

__version__: str

Body = Union[bytes, bytearray, memoryview, str]
Request = Union[ChatRequest, Mapping[str, Any]]

class ToolwireError(Exception):
    kind: str
    provider: Optional[str]
    status: Optional[int]
    code: Optional[str]
    message: str
    partial: Optional[ChatResponse]
    retryable: bool

class ApiError(ToolwireError):
    body: str
    retry_after: Optional[float]

class TransportError(ToolwireError):
    connect: bool

class TimeoutError(ToolwireError):
    phase: str
    limit: float

class DecodeError(ToolwireError):
    what: str

class StreamError(ToolwireError):
    reason: str

class UnsupportedError(ToolwireError):
    feature: str

class InputError(ToolwireError):
    path: str

class MaxTurnsError(ToolwireError):
    turns: int

class McpError(ToolwireError):
    server: str

def providers() -> List[str]: ...
def realtime_providers() -> List[str]: ...
def encode(provider: str, request: Request, stream: bool = False) -> Dict[str, Any]: ...
def encode_request(provider: str, request: Request, stream: bool = False) -> WireRequest: ...
def decode(
    provider: str,
    body: Body,
    *,
    status: Optional[int] = None,
    base_url: Optional[str] = None,
    request: Optional[Request] = None,
) -> ChatResponse: ...
def replay(
    provider: str,
    body: Body,
    base_url: Optional[str] = None,
    *,
    request: Optional[Request] = None,
    status: Optional[int] = None,
    text_calls: Optional[str] = None,
) -> ChatResponse: ...
def replay_events(
    provider: str,
    body: Body,
    base_url: Optional[str] = None,
    *,
    request: Optional[Request] = None,
    text_calls: Optional[str] = None,
) -> Tuple[List[StreamEvent], ChatResponse]: ...
def replay_session(provider: str, body: Body) -> SessionReplay: ...
def schema(
    provider: str, parameters: Mapping[str, Any], *, strict: bool = False, json_schema: bool = False
) -> Dict[str, Any]: ...
def parse_text_calls(
    text: str, format: str = "auto", tools: Optional[Mapping[str, Mapping[str, Any]]] = None
) -> List[TextPiece]: ...

class StreamReader:
    def __init__(
        self,
        provider: str,
        base_url: Optional[str] = None,
        *,
        request: Optional[Request] = None,
        text_calls: Optional[str] = None,
        partial_json: bool = False,
        max_body_bytes: Optional[int] = None,
        max_event_bytes: Optional[int] = None,
        max_argument_bytes: Optional[int] = None,
    ) -> None: ...
    def feed(self, data: Body) -> List[StreamEvent]: ...
    def finish(self) -> ChatResponse: ...
    def take_events(self) -> List[StreamEvent]: ...
    @property
    def received(self) -> int: ...

class RealtimeReader:
    def __init__(self, provider: str) -> None: ...
    def feed(self, data: Body) -> List[Dict[str, Any]]: ...
    def feed_event(self, event: Mapping[str, Any]) -> List[Dict[str, Any]]: ...
    def observe_client(self, event: Mapping[str, Any]) -> None: ...
    def finish(self) -> SessionReplay: ...

class PartialJson:
    def __init__(self, max_depth: Optional[int] = None) -> None: ...
    def feed(self, fragment: str) -> List[Dict[str, Any]]: ...
    def finish(self) -> Tuple[bool, List[Dict[str, Any]]]: ...
    @property
    def offset(self) -> int: ...
    @property
    def is_complete(self) -> bool: ...
    @property
    def invalid(self) -> Optional[Tuple[int, str]]: ...

class ArgumentTracker:
    def __init__(self) -> None: ...
    def observe(self, event: StreamEvent) -> List[Dict[str, Any]]: ...

class TextCallReader:
    def __init__(
        self, format: str = "auto", tools: Optional[Mapping[str, Mapping[str, Any]]] = None
    ) -> None: ...
    def push(self, text: str) -> List[TextPiece]: ...
    def finish(self) -> List[TextPiece]: ...

class ChatStream:
    def __aiter__(self) -> ChatStream: ...
    def __anext__(self) -> Awaitable[StreamEvent]: ...
    def finish(self) -> Awaitable[ChatResponse]: ...

class Client:
    def __init__(
        self,
        provider: str,
        *,
        base_url: Optional[str] = None,
        api_key: Optional[str] = None,
        headers: Optional[Sequence[Tuple[str, str]]] = None,
    ) -> None: ...
    @property
    def provider(self) -> str: ...
    @property
    def base_url(self) -> str: ...
    def chat(self, request: Request) -> Awaitable[ChatResponse]: ...
    def stream(self, request: Request) -> Awaitable[ChatStream]: ...

Handler = Callable[[Dict[str, Any]], Any]

class ToolRegistry:
    def __init__(self, *, strict: Optional[bool] = None, max_result_bytes: Optional[int] = None) -> None: ...
    def register(
        self,
        name: str,
        description: str,
        parameters: Mapping[str, Any],
        handler: Handler,
        *,
        timeout: Optional[float] = None,
        source: Optional[str] = None,
        strict: bool = False,
    ) -> None: ...
    def unregister(self, name: str) -> bool: ...
    def __contains__(self, name: str) -> bool: ...
    def definitions(self) -> List[ToolDefinition]: ...
    def dispatch(self, call: ToolCall) -> Awaitable[ToolResult]: ...

BeforeTool = Callable[[ToolCall], Any]
AfterTurnHook = Callable[[TurnReport], Any]

class AgentRun:
    def __aiter__(self) -> AgentRun: ...
    def __anext__(self) -> Awaitable[AgentEvent]: ...
    def finish(self) -> Awaitable[AgentOutcome]: ...

class Agent:
    def __init__(
        self,
        client: Client,
        registry: ToolRegistry,
        *,
        model: Optional[str] = None,
        max_turns: Optional[int] = None,
        before_tool: Optional[BeforeTool] = None,
        after_turn: Optional[AfterTurnHook] = None,
        hook_timeout: Optional[float] = None,
    ) -> None: ...
    def run(self, request: Request) -> AgentRun: ...
    def prompt(self, text: str) -> Awaitable[str]: ...

class MockServer:
    @staticmethod
    def start(provider: str, replies: Sequence[MockReply]) -> Awaitable[MockServer]: ...
    @property
    def url(self) -> str: ...
    @property
    def remaining(self) -> int: ...
    def requests(self) -> List[Dict[str, Any]]: ...
    def close(self) -> None: ...
