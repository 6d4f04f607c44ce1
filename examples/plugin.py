#!/usr/bin/env python3
"""A toolwire / N.E.K.O. tool plugin in Python, standard library only.

It serves one tool, ``get_weather``, to a running ``toolwire serve``:

1. starts its own callback server on 127.0.0.1 (a free port unless --port is given);
2. registers the tool with ``POST /api/tools/register``, retrying until the server answers;
3. answers each callback ``{"name", "arguments", "call_id", "raw_arguments"}`` with
   ``{"output": ..., "is_error": false}`` (or ``{"is_error": true, "error": "..."}``),
   first telling the people waiting what it does (``POST /api/tools/progress``, never seen by
   the model);
4. every few seconds checks ``GET /api/tools`` and registers again if the tool is gone
   (the server restarted without --state);
5. on Ctrl-C or SIGTERM unregisters the tool and exits.

Run it against a server::

    toolwire serve &
    python3 examples/plugin.py --server http://127.0.0.1:48911
    curl -s -H 'content-type: application/json' -d '{"message": "get_weather in Paris?"}' \\
        http://127.0.0.1:48911/api/chat
"""

import argparse
import json
import signal
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOOL = "get_weather"
PARAMETERS = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "City name"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    },
    "required": ["city"],
}
# Answers, so the example runs offline; a real plugin would ask a weather service.
TEMPERATURES_C = {"paris": 18, "tokyo": 24, "beijing": 21}


def get_weather(arguments):
    """The tool itself: returns the output, or raises ValueError for an error result."""
    city = str(arguments.get("city", "")).strip()
    if not city:
        raise ValueError("city is empty")
    temp_c = TEMPERATURES_C.get(city.lower(), 20)
    unit = arguments.get("unit", "celsius")
    temp = temp_c if unit == "celsius" else round(temp_c * 9 / 5 + 32)
    return {"city": city, "temperature": temp, "unit": unit, "reported_by": "plugin.py"}


class Callback(BaseHTTPRequestHandler):
    """POST /tools/get_weather: the server calls the tool here."""

    server_url = "http://127.0.0.1:48911"  # set from --server in main()

    def do_POST(self):
        if self.path != "/tools/" + TOOL:
            return self.answer(404, {"is_error": True, "error": "no tool at " + self.path})
        try:
            length = int(self.headers.get("Content-Length") or 0)
            if length > 1 << 20:
                return self.answer(413, {"is_error": True, "error": "body too large"})
            call = json.loads(self.rfile.read(length) or b"{}")
            arguments = call.get("arguments")
            if not isinstance(arguments, dict):
                arguments = {}
            city = str(arguments.get("city", "")).strip() or "somewhere"
            report(call, summary="Looking up the weather in %s…" % city)
            output = get_weather(arguments)
            self.answer(200, {"output": output, "is_error": False})
        except Exception as e:  # every failure is an error result, never a crash
            self.answer(200, {"is_error": True, "error": "%s: %s" % (type(e).__name__, e)})

    def answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


# Loopback only: never send the calls through a proxy from the environment.
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def post(server, path, body, timeout=5):
    request = urllib.request.Request(
        server + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with OPENER.open(request, timeout=timeout) as response:
        return json.loads(response.read() or b"null")


def report(call, **fields):
    """Tells the server how far a running call is (``summary``, or ``progress`` with optional
    ``total`` and ``message``): the chat waiting on it streams it and the server's page shows
    it; the model never sees it. Best effort: a report that fails changes nothing."""
    body = dict(fields, call_id=call.get("call_id"), name=TOOL)
    try:
        post(Callback.server_url, "/api/tools/progress", body, timeout=1)
    except (OSError, ValueError):
        pass


def get(server, path, timeout=5):
    with OPENER.open(server + path, timeout=timeout) as response:
        return json.loads(response.read() or b"null")


def registration(callback_url, args):
    return {
        "name": TOOL,
        "description": "Current weather for a city.",
        "parameters": PARAMETERS,
        "callback_url": callback_url,
        "role": args.role,
        "source": args.source,
        "timeout_seconds": 10,
    }


def listed(server, callback_url, role):
    """Whether the server lists the tool with our callback URL in every role it applies to."""
    query = "?role=" + urllib.parse.quote(role) if role else ""
    roles = get(server, "/api/tools" + query).get("tools_by_role", {})
    return bool(roles) and all(
        any(t.get("name") == TOOL and t.get("callback_url") == callback_url for t in tools)
        for tools in roles.values()
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default="http://127.0.0.1:48911")
    parser.add_argument("--port", type=int, default=0, help="callback port (0: any free one)")
    parser.add_argument("--role", default=None, help="one role instead of every role")
    parser.add_argument("--source", default="plugin:python-weather")
    parser.add_argument("--check-every", type=float, default=3.0)
    args = parser.parse_args()
    server = args.server.rstrip("/")
    Callback.server_url = server

    httpd = ThreadingHTTPServer(("127.0.0.1", args.port), Callback)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    callback_url = "http://127.0.0.1:%d/tools/%s" % (httpd.server_address[1], TOOL)

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())

    registered = False
    waiting_said = False
    while not stop.is_set():
        try:
            if not registered or not listed(server, callback_url, args.role):
                answer = post(server, "/api/tools/register", registration(callback_url, args))
                if not answer.get("ok"):
                    raise RuntimeError(answer.get("error") or answer)
                print("registered %s at %s for roles %s"
                      % (TOOL, callback_url, ", ".join(answer.get("affected_roles", []))),
                      flush=True)
                registered = True
            stop.wait(args.check_every)
        except (OSError, ValueError, RuntimeError) as e:  # server down or refusing: retry
            if isinstance(e, urllib.error.HTTPError):
                detail = e.read().decode(errors="replace")
                print("server refused the registration: %s" % detail, file=sys.stderr, flush=True)
            elif not waiting_said:
                print("waiting for the server at %s (%s)" % (server, e), file=sys.stderr, flush=True)
                waiting_said = True
            registered = False
            stop.wait(0.5)

    try:
        answer = post(server, "/api/tools/unregister", {"name": TOOL, "role": args.role})
        print("unregistered %s (removed: %s)" % (TOOL, answer.get("removed")), flush=True)
    except (OSError, ValueError) as e:
        print("could not unregister: %s" % e, file=sys.stderr, flush=True)
    httpd.shutdown()


if __name__ == "__main__":
    main()
