#!/usr/bin/env bash
# Load and fault script for `toolwire serve` (standard-library Python as the driver). Prints the
# table that goes in docs/server.md: registrations per second at 0, 1k and 10k tools with
# --state, GET /api/tools latency at 10k tools, resident memory around a maximum-size chat (and
# 20 s after it, when the allocator has given memory back),
# slowloris and idle connections closed by the header timeout while /api/tools answers under a
# file-descriptor limit of 256, and kill -9 rounds during registration bursts.
#
#   benches/serve_load.sh [path/to/toolwire]    (default: builds and uses the release binary)
#
# Environment: ROUNDS (kill -9 rounds, default 20), TOOLS (default 10000).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-}
if [ -z "$bin" ]; then
  cargo build --release --quiet --features cli,jemalloc --bin toolwire
  bin="${CARGO_TARGET_DIR:-target}/release/toolwire"
fi
exec python3 - "$bin" <<'PY'
import json, os, random, resource, socket, subprocess, sys, tempfile, threading, time
import http.client

BIN = sys.argv[1]
ROUNDS = int(os.environ.get("ROUNDS", "20"))
TOOLS = int(os.environ.get("TOOLS", "10000"))
MAX_CHAT = 8 << 20


def serve(*args, nofile=None):
    def limit():
        if nofile:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
    p = subprocess.Popen([BIN, "serve", "--port", "0", *args], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True, preexec_fn=limit)
    first = p.stdout.readline()
    addr = first.strip().rsplit("http://", 1)[1]
    threading.Thread(target=lambda: [None for _ in p.stdout], daemon=True).start()
    host, port = addr.rsplit(":", 1)
    return p, host, int(port)


def status_kib(pid, field):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(field):
            return int(line.split()[1])
    return 0


def conn(port, timeout=30):
    return http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)


def register_body(name):
    return json.dumps({"name": name, "callback_url": f"http://127.0.0.1:9/cb/{name}",
                       "source": "plugin:load",
                       "parameters": {"type": "object",
                                      "properties": {"city": {"type": "string"}}}})


def post(c, path, body):
    c.request("POST", path, body=body, headers={"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    return r.status, data


rows = []

# 1. Registrations per second as the registry grows, with --state; GET /api/tools at the end.
with tempfile.TemporaryDirectory() as d:
    p, _, port = serve("--state", os.path.join(d, "state.db"))
    c = conn(port)
    rate = {}
    each = []
    t0 = time.perf_counter()
    block = time.perf_counter()
    for i in range(TOOLS):
        t = time.perf_counter()
        s, body = post(c, "/api/tools/register", register_body(f"tool_{i}"))
        each.append(time.perf_counter() - t)
        assert s == 200, body
        if (i + 1) % 1000 == 0:
            now = time.perf_counter()
            rate[i + 1] = 1000 / (now - block)
            block = now
    total = time.perf_counter() - t0
    marks = sorted(rate)
    rows.append(("registrations/s, tools 0 to 1k (--state)", f"{rate[marks[0]]:.0f}"))
    if len(marks) > 1:
        rows.append((f"registrations/s, tools 1k to 2k", f"{rate[marks[1]]:.0f}"))
    rows.append((f"registrations/s, tools {marks[-1]//1000 - 1}k to {marks[-1]//1000}k",
                 f"{rate[marks[-1]]:.0f}"))
    rows.append((f"last 1k / first 1k time ratio", f"{rate[marks[0]] / rate[marks[-1]]:.2f}"))
    # The median is what one registration costs, whatever else the machine was doing.
    first, last = sorted(each[:1000]), sorted(each[-1000:])
    rows.append(("median registration, first 1k / last 1k, ms (ratio)",
                 f"{first[500]*1000:.2f} / {last[500]*1000:.2f} ({last[500] / first[500]:.2f})"))
    lat = []
    size = 0
    for _ in range(30):
        t = time.perf_counter()
        c.request("GET", "/api/tools")
        r = c.getresponse()
        data = r.read()
        lat.append((time.perf_counter() - t) * 1000)
        size = len(data)
        assert r.status == 200
    assert len(json.loads(data)["tools_by_role"]["default"]) == TOOLS
    lat.sort()
    rows.append((f"GET /api/tools at {TOOLS} tools ({size // 1024} KiB), median / p95 ms",
                 f"{lat[len(lat)//2]:.1f} / {lat[int(len(lat)*0.95)]:.1f}"))
    c.close()
    p.kill(); p.wait()

# 2. Resident memory around a maximum-size chat to an offline role.
p, _, port = serve()
time.sleep(0.3)
before = status_kib(p.pid, "VmRSS")
frame = json.dumps({"message": ""})
body = json.dumps({"message": "x" * (MAX_CHAT - len(frame))}).encode()
assert len(body) == MAX_CHAT
c = conn(port, timeout=120)
s, answer = post(c, "/api/chat", body)
assert s == 200, answer[:300]
peak = status_kib(p.pid, "VmHWM")
time.sleep(0.5)
after = status_kib(p.pid, "VmRSS")
time.sleep(19.5)
later = status_kib(p.pid, "VmRSS")
rows.append(("chat of 8 MiB: RSS before / peak / 0.5 s after / 20 s after, MiB",
             f"{before/1024:.0f} / {peak/1024:.0f} / {after/1024:.0f} / {later/1024:.0f}"))
rows.append(("chat of 8 MiB: peak growth / request size", f"{(peak-before)*1024/MAX_CHAT:.1f}x"))
p.kill(); p.wait()

# 3. Slowloris and idle connections under a descriptor limit of 256.
TIMEOUT = 2
p, _, port = serve("--header-timeout", str(TIMEOUT), nofile=256)
socks = []
for i in range(600):
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
    except OSError:
        break
    if i < 200:
        s.sendall(b"GET /api/tools HTTP/1.1\r\nHo")
    socks.append(s)
ok = 0
lat = []
for _ in range(10):
    t = time.perf_counter()
    try:
        c = conn(port, timeout=15)
        c.request("GET", "/api/tools")
        r = c.getresponse(); r.read()
        ok += r.status == 200
        c.close()
    except OSError:
        pass
    lat.append((time.perf_counter() - t) * 1000)
time.sleep(TIMEOUT + 1.5)
closed = 0
for s in socks:
    s.settimeout(0.2)
    try:
        closed += s.recv(1) == b""
    except socket.timeout:
        pass
    except OSError:
        closed += 1
    s.close()
rows.append((f"200 slowloris + {len(socks)-200} idle connections, fd limit 256: "
             f"GET /api/tools answered", f"{ok}/10 (max {max(lat):.0f} ms)"))
rows.append((f"connections closed {TIMEOUT + 1.5:.1f} s after a {TIMEOUT} s header timeout",
             f"{closed}/{len(socks)}"))
p.kill(); p.wait()

# 4. kill -9 during registration and unregistration bursts.
with tempfile.TemporaryDirectory() as d:
    state = os.path.join(d, "state.db")
    expected = {}
    acked_total = 0
    lost = 0
    for rnd in range(ROUNDS):
        p, _, port = serve("--state", state)
        acked, flying = [], set()
        lock = threading.Lock()

        def worker(w):
            c = conn(port, timeout=10)
            i = 0
            while True:
                name = f"r{rnd}w{w}n{i}"
                with lock:
                    flying.add(name)
                try:
                    s, _ = post(c, "/api/tools/register", register_body(name))
                    if s != 200:
                        return
                    with lock:
                        acked.append((name, True))
                    if i % 3 == 0:
                        s, _ = post(c, "/api/tools/unregister", json.dumps({"name": name}))
                        if s != 200:
                            return
                        with lock:
                            acked.append((name, False))
                except (OSError, http.client.HTTPException):
                    return
                with lock:
                    flying.discard(name)
                i += 1

        ts = [threading.Thread(target=worker, args=(w,)) for w in range(4)]
        for t in ts:
            t.start()
        time.sleep(random.uniform(0.2, 0.8))
        p.kill(); p.wait()
        for t in ts:
            t.join()
        for name, reg in acked:
            expected[name] = reg
        for name in flying:
            expected.pop(name, None)
        acked_total += len(acked)
        p, _, port = serve("--state", state)
        c = conn(port)
        c.request("GET", "/api/tools")
        now = {t["name"] for t in json.loads(c.getresponse().read())["tools_by_role"]["default"]}
        lost += sum(1 for name, reg in expected.items() if (name in now) != reg)
        p.kill(); p.wait()
    leftovers = [f for f in os.listdir(d) if ".tmp" in f or ".importing" in f]
    rows.append((f"kill -9 rounds: acknowledged changes / wrong after restart",
                 f"{ROUNDS} rounds: {acked_total} / {lost}"))
    rows.append(("temporary files left", str(len(leftovers))))

width = max(len(r[0]) for r in rows)
print(f"| {'measure'.ljust(width)} | result |")
print(f"|{'-' * (width + 2)}|--------|")
for k, v in rows:
    print(f"| {k.ljust(width)} | {v} |")
PY
