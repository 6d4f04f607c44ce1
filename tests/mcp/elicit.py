"""An MCP server (official Python SDK) whose tool asks the user for input mid-call
(`ctx.elicit`, an `elicitation/create` request to the client), for toolwire's input request
tests. Run: python elicit.py (stdio).

Tool: book(flight) -> {"action": "accept"|"decline"|"cancel", "seat", "window"}: asks "Which
seat on FLIGHT?" with a form of `seat` (string) and `window` (boolean), and reports what the
client answered.
"""

from pydantic import BaseModel

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("toolwire-elicit-test")


class Seat(BaseModel):
    seat: str
    window: bool = False


@server.tool(description="Books a seat, asking the user which one")
async def book(flight: str, ctx: Context) -> dict:
    answer = await ctx.elicit(f"Which seat on {flight}?", Seat)
    if answer.action == "accept":
        return {"action": "accept", "seat": answer.data.seat, "window": answer.data.window}
    return {"action": answer.action, "seat": None, "window": None}


if __name__ == "__main__":
    server.run()
