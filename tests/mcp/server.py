"""An MCP server written with the official Python SDK (`mcp` on PyPI), for toolwire's tests.

Run: python server.py stdio | python server.py http PORT
Tools: add (structured output), echo (annotations: read-only), wipe (destructive),
image (a PNG content block), fail (isError), weather (an outputSchema its
structuredContent breaks unless the city is Oslo), broke (isError with an image and
structuredContent), tree (a recursive schema), slow (sleeps,
reports progress), grow (registers a new tool, then the server announces list_changed),
die (exits the process).
"""

import asyncio
import base64
import os
import sys
import threading

from pydantic import BaseModel

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.utilities.types import Image
from mcp.types import CallToolResult, ImageContent, TextContent, ToolAnnotations

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c63f8cfc0f01f0005000201e5273ede0000000049454e44ae426082"
)

server = MCPServer("toolwire-test")


class Sum(BaseModel):
    sum: int


@server.tool(description="Adds a and b")
def add(a: int, b: int) -> Sum:
    return Sum(sum=a + b)


@server.tool(description="Echoes the text", annotations=ToolAnnotations(readOnlyHint=True))
def echo(text: str) -> str:
    return text


@server.tool(
    description="Deletes everything",
    annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=True),
)
def wipe(path: str) -> str:
    return f"pretended to wipe {path}"


@server.tool(description="A 1x1 PNG")
def image() -> Image:
    return Image(data=PNG, format="png")


@server.tool(description="Always fails")
def fail(reason: str) -> str:
    raise ValueError(f"failed on purpose: {reason}")


@server.tool(description="Fails, showing what went wrong")
def broke() -> CallToolResult:
    return CallToolResult(
        content=[
            TextContent(type="text", text="the chart did not render"),
            ImageContent(type="image", data=base64.b64encode(PNG).decode(), mime_type="image/png"),
        ],
        structured_content={"code": 7},
        is_error=True,
    )


@server.tool(description="The temperature in a city")
def weather(city: str) -> CallToolResult:
    temp = 21.5 if city == "Oslo" else "warm"
    return CallToolResult(
        content=[TextContent(type="text", text=f"{city}: {temp}")],
        structured_content={"temp_c": temp},
    )


# A schema set by hand is advertised but not enforced by the SDK, so `weather` can break it.
server._tool_manager.get_tool("weather").fn_metadata.output_schema = {
    "type": "object",
    "properties": {"temp_c": {"type": "number"}},
    "required": ["temp_c"],
}


class Node(BaseModel):
    label: str
    children: list["Node"] = []


@server.tool(description="Counts the nodes of a tree (a recursive schema)")
def tree(root: Node) -> int:
    def count(n: Node) -> int:
        return 1 + sum(count(c) for c in n.children)

    return count(root)


@server.tool(description="Sleeps, reporting progress")
async def slow(seconds: float, ctx: Context) -> str:
    steps = 4
    for i in range(steps):
        await ctx.report_progress(i, steps, f"step {i + 1} of {steps}")
        await asyncio.sleep(seconds / steps)
    return "done"


@server.tool(description="Adds a tool named `extra`, then announces the new list")
async def grow(ctx: Context) -> str:
    def extra() -> str:
        return "extra here"

    server.add_tool(extra, name="extra", description="Appears after grow")
    await ctx.session.send_tool_list_changed()
    return "grown"


@server.tool(description="Ends the server process a moment after answering")
def die() -> str:
    threading.Timer(0.3, lambda: os._exit(0)).start()
    return "bye"


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
