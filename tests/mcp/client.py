"""The official Python MCP client (`mcp` on PyPI), for toolwire's tests.

python client.py list (URL | -- CMD ARGS...)           the tools as the SDK lists them, JSON
python client.py call NAME ARGS_JSON (URL | -- CMD...)  one call's result, JSON
"""

import asyncio
import json
import sys

from mcp.client import Client
from mcp.client.stdio import StdioServerParameters


def server(argv):
    if argv[0] == "--":
        return StdioServerParameters(command=argv[1], args=argv[2:])
    return argv[0]


async def main(argv):
    if argv[0] == "list":
        async with Client(server(argv[1:])) as client:
            result = await client.list_tools()
            tools = [t.model_dump(by_alias=True, exclude_none=True) for t in result.tools]
            print(json.dumps(tools))
    elif argv[0] == "call":
        async with Client(server(argv[3:])) as client:
            result = await client.call_tool(argv[1], json.loads(argv[2]))
            print(json.dumps(result.model_dump(by_alias=True, exclude_none=True)))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
