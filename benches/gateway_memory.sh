#!/usr/bin/env bash
# Memory of `toolwire serve`'s gateway under what a hostile key holder can send (release build).
# Prints the two tables docs/gateway.md publishes:
#
# 1. Resident memory before and after 10,000 requests each naming another model string
#    (`openai/m1` … `openai/m10000`) whose upstream fails: the server's HTTPS_PROXY is a loopback
#    listener of this script that refuses every CONNECT (and counts them), so nothing leaves the
#    machine and every request ends in the gateway's 502.
# 2. The peak resident memory of one 30 MiB gateway request, over the memory before it, against
#    its size: 20,000 messages of 1.5 KiB (the most messages a body may hold) from a Chat client
#    (same wire, passed through) and from a Messages client (translated), both forwarded to the
#    fake upstream of examples/gateway_upstream.rs; the issue's shape (900,000 short messages,
#    refused with 413 since the message bound); and four 25 MiB requests at once. The peak is
#    VmHWM, reset before each request through /proc/PID/clear_refs.
#
# Run: bash benches/gateway_memory.sh   (needs python3; builds the release binaries gateway.sh
# uses: jemalloc, and the system allocator into target/sysalloc. BIN=a dir holding toolwire and
# examples/gateway_upstream, SYS_BIN=a dir holding a toolwire without jemalloc (empty: skip it).
# MODELS=10000.)
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-target}
if [[ ! ${BIN:-} ]]; then
    # The README's plain install line (`--features cli`): the system allocator, kept as
    # $target/sysalloc/toolwire (the second build replaces target/release/toolwire; both share
    # the dependencies' builds).
    cargo build --release --quiet --features cli --bin toolwire
    mkdir -p "$target/sysalloc"
    cp "$target/release/toolwire" "$target/sysalloc/toolwire"
    cargo build --release --quiet --features cli,jemalloc,redis --bin toolwire --example gateway_upstream
fi
bin=${BIN:-$target/release}
sys_bin=${SYS_BIN-${BIN:-$target/sysalloc}}
exec python3 - "$bin" "$sys_bin" <<'PY'
import http.client, json, os, socket, subprocess, sys, tempfile, threading, time

BIN, SYS_BIN = sys.argv[1], sys.argv[2]
MODELS = int(os.environ.get("MODELS", "10000"))
MIB = 1 << 20


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def status_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} for {pid}")


def reset_peak(pid):
    with open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("5")


class RefusingProxy:
    """An HTTP proxy on loopback that refuses every CONNECT, counting the hosts asked for."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(512)
        self.port = self.sock.getsockname()[1]
        self.targets = {}
        self.lock = threading.Lock()
        threading.Thread(target=self.run, daemon=True).start()

    def run(self):
        while True:
            conn, _ = self.sock.accept()
            threading.Thread(target=self.one, args=(conn,), daemon=True).start()

    def one(self, conn):
        try:
            head = b""
            while b"\r\n\r\n" not in head and len(head) < 65536:
                chunk = conn.recv(4096)
                if not chunk:
                    break
                head += chunk
            words = head.split(b"\r\n", 1)[0].split()
            target = words[1].decode() if len(words) > 1 else "?"
            with self.lock:
                self.targets[target] = self.targets.get(target, 0) + 1
            conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
        except OSError:
            pass
        finally:
            conn.close()


def start(argv, env=None, log=None):
    return subprocess.Popen(argv, env=env, stdout=log or subprocess.DEVNULL, stderr=subprocess.STDOUT)


def post(port, path, body, timeout=120):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    c.request("POST", path, body, {"content-type": "application/json"})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def wait_ready(port, path, body):
    for _ in range(300):
        try:
            if post(port, path, body, timeout=5)[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"port {port} never answered 200")


CHAT = json.dumps({"model": "up", "messages": [{"role": "user", "content": "hi"}]}).encode()


def serve(binary, upstream, proxy, workdir):
    port = free_port()
    config = os.path.join(workdir, "roles.toml")
    with open(config, "w") as f:
        f.write(
            f'[[role]]\nname = "up"\nprovider = "openai"\nmodel = "model-x"\n'
            f'base_url = "http://127.0.0.1:{upstream}"\napi_key_env = "BENCH_UPSTREAM_KEY"\n'
        )
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env.update(
        BENCH_UPSTREAM_KEY="unused",
        OPENAI_API_KEY="unused",
        HTTPS_PROXY=f"http://127.0.0.1:{proxy.port}",
        HTTP_PROXY=f"http://127.0.0.1:{proxy.port}",
        NO_PROXY="127.0.0.1,localhost",
    )
    log = open(os.path.join(workdir, f"serve-{port}.log"), "wb")
    p = start([binary, "serve", "--port", str(port), "--config", config], env, log)
    wait_ready(port, "/v1/chat/completions", CHAT)
    return p, port


def model_strings(binary, upstream, proxy, workdir):
    p, port = serve(binary, upstream, proxy, workdir)
    try:
        for i in range(50):  # warm: the first PROVIDER/MODEL client, the proxy path
            post(port, "/v1/chat/completions", body_for("openai/warm"))
        time.sleep(1)
        before = status_kib(p.pid, "VmRSS")
        seen = {}
        marks = {}
        done = [0]
        lock = threading.Lock()

        def worker(start_at):
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            for i in range(start_at, MODELS + 1, 4):
                c.request("POST", "/v1/chat/completions", body_for(f"openai/m{i}"),
                          {"content-type": "application/json"})
                r = c.getresponse()
                r.read()
                with lock:
                    seen[r.status] = seen.get(r.status, 0) + 1
                    done[0] += 1
                    if done[0] % (MODELS // 4) == 0:
                        marks[done[0]] = status_kib(p.pid, "VmRSS")
            c.close()

        t0 = time.monotonic()
        threads = [threading.Thread(target=worker, args=(k,)) for k in range(1, 5)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        took = time.monotonic() - t0
        after = status_kib(p.pid, "VmRSS")
        time.sleep(5)
        settled = status_kib(p.pid, "VmRSS")
        return before, marks, after, settled, seen, took
    finally:
        p.kill()
        p.wait()


def body_for(model):
    return json.dumps({"model": model, "messages": [{"role": "user", "content": "hi"}]}).encode()


def big(wire, size, messages):
    frame = '{"role":"user","content":""}'
    each = size // messages - len(frame) - 1
    one = '{"role":"%s","content":"%s"}'
    roles = ["user", "assistant"] if wire == "messages" else ["user"]
    parts = [one % (roles[i % len(roles)], "x" * each) for i in range(messages)]
    if wire == "messages":
        parts[-1] = one % ("user", "x" * each)
        head = '{"model":"up","max_tokens":16,"messages":['
    else:
        head = '{"model":"up","messages":['
    return (head + ",".join(parts) + "]}").encode()


def one_request(binary, upstream, proxy, workdir, cases):
    p, port = serve(binary, upstream, proxy, workdir)
    rows = []
    try:
        for name, path, bodies in cases:
            time.sleep(1)
            before = status_kib(p.pid, "VmRSS")
            reset_peak(p.pid)
            results = [None] * len(bodies)

            def send(k):
                results[k] = post(port, path, bodies[k])

            threads = [threading.Thread(target=send, args=(k,)) for k in range(len(bodies))]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            peak = status_kib(p.pid, "VmHWM")
            after = status_kib(p.pid, "VmRSS")
            time.sleep(5)
            settled = status_kib(p.pid, "VmRSS")
            size = sum(len(b) for b in bodies)
            statuses = ",".join(str(s) for s, _ in results)
            rows.append((name, size, statuses, before, peak, after, settled))
    finally:
        p.kill()
        p.wait()
    return rows


def main():
    workdir = tempfile.mkdtemp(prefix="tw-gateway-memory-")
    upstream_port = free_port()
    upstream = start([os.path.join(BIN, "examples", "gateway_upstream"), str(upstream_port)])
    proxy = RefusingProxy()
    try:
        wait_ready(upstream_port, "/v1/chat/completions", CHAT)
        builds = [("jemalloc", os.path.join(BIN, "toolwire"))]
        if SYS_BIN:
            builds.append(("system allocator", os.path.join(SYS_BIN, "toolwire")))
        size = 30 * MIB
        cases = [
            ("Chat, 20,000 messages (same wire)", "/v1/chat/completions", [big("chat", size, 20_000)]),
            ("Messages, 20,000 messages (translated)", "/v1/messages", [big("messages", size, 20_000)]),
            ("Chat, 900,000 short messages (refused: over 20,000)", "/v1/chat/completions",
             [big("chat", size, 900_000)]),
            ("4 × 25 MiB at once, Messages, 20,000 messages each", "/v1/messages",
             [big("messages", 25 * MIB, 20_000) for _ in range(4)]),
        ]
        load = open("/proc/loadavg").read().split()[:3]
        cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
        print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores ({cpu}), "
              f"load average {' '.join(load)}")
        print()
        print(f"| build | RSS before | after {MODELS:,} model strings | 5 s later | growth | statuses | time |")
        print("|---|---|---|---|---|---|---|")
        for name, binary in builds:
            before, marks, after, settled, seen, took = model_strings(binary, upstream_port, proxy, workdir)
            statuses = ", ".join(f"{n}× {s}" for s, n in sorted(seen.items()))
            print(f"| {name} | {before / 1024:.1f} MiB | {after / 1024:.1f} MiB | {settled / 1024:.1f} MiB | "
                  f"{(after - before) / 1024:+.1f} MiB | {statuses} | {took:.1f} s |")
            print("  RSS along the way: " + ", ".join(f"{k}: {v / 1024:.1f} MiB" for k, v in sorted(marks.items())),
                  file=sys.stderr)
        targets = ", ".join(f"{n}× {t}" for t, n in sorted(proxy.targets.items()))
        print(f"\nCONNECTs the refusing proxy saw: {targets}")
        print()
        print("| build | request | body | status | RSS before | peak | peak over before | ÷ body | after | 5 s later |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for name, binary in builds:
            for case, size_b, statuses, before, peak, after, settled in one_request(
                    binary, upstream_port, proxy, workdir, cases):
                grew = (peak - before) * 1024
                print(f"| {name} | {case} | {size_b / MIB:.1f} MiB | {statuses} | {before / 1024:.1f} MiB | "
                      f"{peak / 1024:.1f} MiB | {grew / MIB:.1f} MiB | {grew / size_b:.1f}× | "
                      f"{after / 1024:.1f} MiB | {settled / 1024:.1f} MiB |")
    finally:
        upstream.kill()
        upstream.wait()


main()
PY
