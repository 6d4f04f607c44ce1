"""A hostile MCP server over stdio, written by hand (no SDK: the SDK would refuse to send
what this one sends), for toolwire's tests.

Tools: good (echoes), noschema (listed without inputSchema: a broken entry), big and
big_id_last (answer with a 50 MiB text result, the id before or after the result).
"""

import json
import sys

BIG = 50 * 1024 * 1024

TOOLS = [
    {"name": "good", "description": "Echoes", "inputSchema": {"type": "object"}},
    {"name": "noschema", "description": "Has no inputSchema"},
    {"name": "big", "description": "A 50 MiB result", "inputSchema": {"type": "object"}},
    {"name": "big_id_last", "description": "Same, id last", "inputSchema": {"type": "object"}},
]


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def big(id_, id_last):
    out = sys.stdout
    head = '{"jsonrpc":"2.0",' + ("" if id_last else '"id":%s,' % json.dumps(id_))
    out.write(head + '"result":{"content":[{"type":"text","text":"')
    chunk = "x" * (1024 * 1024)
    for _ in range(BIG // len(chunk)):
        out.write(chunk)
    out.write('"}]}' + (',"id":%s' % json.dumps(id_) if id_last else "") + "}\n")
    out.flush()


for line in sys.stdin:
    message = json.loads(line)
    method, id_ = message.get("method"), message.get("id")
    if id_ is None:
        continue
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": id_, "result": {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "hostile", "version": "0"},
        }})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": id_, "result": {"tools": TOOLS}})
    elif method == "tools/call":
        name = message["params"]["name"]
        if name in ("big", "big_id_last"):
            big(id_, name == "big_id_last")
        else:
            send({"jsonrpc": "2.0", "id": id_, "result": {
                "content": [{"type": "text", "text": "good"}]}})
    else:
        send({"jsonrpc": "2.0", "id": id_, "error": {"code": -32601, "message": method}})
