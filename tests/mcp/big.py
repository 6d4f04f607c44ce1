"""An MCP server (official Python SDK) over streamable HTTP whose `big` tool answers with a
50 MiB text, for toolwire's size limit over HTTP. Run: python big.py PORT [json|sse].
Tool: big -> 50 MiB of "x"; small -> "small".
"""

import sys

import uvicorn

from mcp.server.mcpserver import MCPServer

server = MCPServer("toolwire-big-test")


@server.tool(description="50 MiB of text")
def big() -> str:
    return "x" * (50 * 1024 * 1024)


@server.tool(description="A short answer")
def small() -> str:
    return "small"


if __name__ == "__main__":
    port = int(sys.argv[1])
    json_response = len(sys.argv) > 2 and sys.argv[2] == "json"
    app = server.streamable_http_app(json_response=json_response)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
