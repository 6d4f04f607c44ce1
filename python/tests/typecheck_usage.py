"""Typed use of the package, checked by mypy --strict (tests/test_typecheck.py); not a test."""

from __future__ import annotations

import asyncio
from typing import Dict, List, Optional

import toolwire
from toolwire.types import ChatRequest, ChatResponse, StreamEvent

request: ChatRequest = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
body: Dict[str, object] = toolwire.encode("openai", request, stream=True)
response: ChatResponse = toolwire.replay("openai", b"", None)
text: Optional[str] = response["text"]
calls = [c["name"] for c in response["tool_calls"]]
reader = toolwire.StreamReader("bedrock")
events: List[StreamEvent] = reader.feed(b"")
try:
    toolwire.decode("openai", b"{}", status=500)
except toolwire.ApiError as e:
    status: Optional[int] = e.status
    partial: Optional[ChatResponse] = e.partial

tools = toolwire.ToolRegistry()


@tools.tool
def add(a: int, b: int) -> int:
    return a + b


async def run() -> str:
    mock = await toolwire.MockServer.start("openai", [{"text": "hi"}])
    agent = toolwire.Agent(toolwire.Client("openai", base_url=mock.url), tools, max_turns=3)
    outcome = await agent.run(request).finish()
    mock.close()
    return outcome["response"]["text"] or ""


if __name__ == "__main__":
    print(asyncio.run(run()))
