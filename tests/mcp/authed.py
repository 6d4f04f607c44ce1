"""The test server of server.py (official Python SDK) over streamable HTTP, behind a check of
one request header, for toolwire's auth tests.

python authed.py PORT bearer TOKEN          requires `Authorization: Bearer TOKEN`
python authed.py PORT header NAME VALUE     requires the header NAME: VALUE
Anything else gets 401 with `WWW-Authenticate: Bearer`.
"""

import os
import sys

import uvicorn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server import server  # noqa: E402


def guarded(app, name, value):
    name = name.lower().encode()
    value = value.encode()

    async def asgi(scope, receive, send):
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            if headers.get(name) != value:
                await send({
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [(b"www-authenticate", b"Bearer"), (b"content-type", b"text/plain")],
                })
                await send({"type": "http.response.body", "body": b"unauthorized"})
                return
        await app(scope, receive, send)

    return asgi


if __name__ == "__main__":
    port, kind = int(sys.argv[1]), sys.argv[2]
    if kind == "bearer":
        name, value = "authorization", "Bearer " + sys.argv[3]
    else:
        name, value = sys.argv[3], sys.argv[4]
    app = guarded(server.streamable_http_app(), name, value)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
