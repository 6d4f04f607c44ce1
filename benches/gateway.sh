#!/usr/bin/env bash
# toolwire's gateway and LiteLLM's proxy in front of the same fake upstream
# (examples/gateway_upstream.rs: an OpenAI Chat Completions server answering at once, keeping
# connections alive), loaded with oha in the same run, beside the floor (examples/bare_proxy.rs:
# a proxy of the same parts that forwards and does nothing else). Prints the Markdown table the README
# publishes, one row per gateway path: toolwire on the same wire (a Chat client to the
# OpenAI-compatible upstream: the body passed through, only `model` spliced), toolwire across
# wires (a Messages client to the same upstream: read, translated, re-encoded), both again built
# with the system allocator (the README's `--features cli`; the other rows are the jemalloc
# build), the same-wire route with a gateway key whose limits are counted in memory and in Redis
# (a `redis-server` the script starts on a free loopback port), and LiteLLM: added latency
# (p50/p99 over calling the upstream directly) of non-streamed requests at a fixed rate, added
# time to first byte of streams, requests/s at 32 connections (streamed and not), resident
# memory idle and per open stream. Then what the limiter adds at p50 over the same route
# without a key.
#
# Run: bash benches/gateway.sh   (needs python3, curl, bc; installs oha with cargo, LiteLLM's
# proxy into a venv under the target dir and redis-server with apt-get when missing. RATE=500
# SECS=10 STREAMS=200 N=200. BIN=a dir holding toolwire, examples/gateway_upstream and examples/bare_proxy, SYS_BIN=
# a dir holding a toolwire built without jemalloc: those builds instead of release ones;
# SYS_BIN= (empty) leaves the system-allocator rows out.)
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-target}
rate=${RATE:-500} secs=${SECS:-10} streams=${STREAMS:-200} n=${N:-200}
if [[ ! ${BIN:-} ]]; then
    if [[ ! -v SYS_BIN ]]; then
        # The README's plain install line (`--features cli`): the system allocator, kept as
        # $target/sysalloc/toolwire (the second build replaces target/release/toolwire; both
        # share the dependencies' builds).
        cargo build --release --quiet --features cli --bin toolwire
        mkdir -p "$target/sysalloc"
        cp "$target/release/toolwire" "$target/sysalloc/toolwire"
    fi
    cargo build --release --quiet --features cli,jemalloc,redis --bin toolwire --example gateway_upstream \
        --example bare_proxy
fi
bin=${BIN:-$target/release}
sys_bin=${SYS_BIN-${BIN:-$target/sysalloc}} # empty: no system-allocator rows
PATH=${CARGO_HOME:-$HOME/.cargo}/bin:$PATH # where cargo install puts oha
if ! command -v oha >/dev/null; then
    # Its own target dir, removed after: oha's build is not toolwire's.
    oha_target=$(mktemp -d)
    CARGO_TARGET_DIR=$oha_target cargo install oha --locked --quiet
    rm -rf "$oha_target"
fi
venv=$target/tmp/litellm-venv
if [[ ! -x $venv/bin/litellm ]]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q 'litellm[proxy]'
fi
command -v redis-server >/dev/null ||
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server >/dev/null)
dir=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    rm -rf "$dir"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

up_port=18101 tw_port=18102 ll_port=18103 ts_port=18104 tm_port=18105 tr_port=18106 bp_port=18107
redis_port=$(free_port)
"$bin/examples/gateway_upstream" $up_port >/dev/null &
pids+=($!)
up="http://127.0.0.1:$up_port"
# The floor: a proxy of the same parts (axum, reqwest, two workers) that does nothing else.
"$bin/examples/bare_proxy" $bp_port "$up" >/dev/null &
bp_pid=$!
pids+=($bp_pid)
redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no >"$dir/redis.log" 2>&1 &
pids+=($!)
cat >"$dir/roles.toml" <<EOF
[[role]]
name = "up"
provider = "openai"
model = "model-x"
base_url = "$up"
api_key_env = "BENCH_UPSTREAM_KEY"

[[role]]
name = "hold"
provider = "openai"
model = "hold"
base_url = "$up"
api_key_env = "BENCH_UPSTREAM_KEY"
EOF
# The limiter's gateway key: limits far above what a run sends, so every request is counted and
# let through.
gateway_key=bench-gateway-key
limited() { # $1: the [limits] lines
    cat "$dir/roles.toml"
    cat <<EOF

[[gateway_key]]
name = "bench"
key_env = "BENCH_GATEWAY_KEY"
requests_per_minute = 1000000000
tokens_per_minute = 1000000000000
tokens_per_day = 1000000000000

[limits]
$1
EOF
}
limited "" >"$dir/memory.toml"
limited "store = \"redis://127.0.0.1:$redis_port\"" >"$dir/redis.toml"
serve() { # $1: the dir of the toolwire binary, $2: port, $3: config
    BENCH_UPSTREAM_KEY=unused BENCH_GATEWAY_KEY=$gateway_key "$1/toolwire" serve --port "$2" \
        --config "$3" >"$dir/serve-$2.log" 2>&1 &
    pids+=($!)
}
serve "$bin" $tw_port "$dir/roles.toml"
tw_pid=$!
ts_pid=
if [[ $sys_bin ]]; then
    serve "$sys_bin" $ts_port "$dir/roles.toml"
    ts_pid=$!
fi
serve "$bin" $tm_port "$dir/memory.toml"
tm_pid=$!
serve "$bin" $tr_port "$dir/redis.toml"
tr_pid=$!
cat >"$dir/litellm.yaml" <<EOF
model_list:
  - model_name: up
    litellm_params: {model: openai/model-x, api_base: "$up/v1", api_key: unused}
  - model_name: hold
    litellm_params: {model: openai/hold, api_base: "$up/v1", api_key: unused}
litellm_settings:
  drop_params: false
EOF
# A local bench: no master key, and the bundled model price map instead of a download.
LITELLM_DANGEROUSLY_PERMIT_WEAK_OR_UNSET_MASTER_KEY=true LITELLM_LOCAL_MODEL_COST_MAP=True \
    "$venv/bin/litellm" --config "$dir/litellm.yaml" --host 127.0.0.1 --port $ll_port --num_workers 1 \
    >"$dir/litellm.log" 2>&1 &
ll_pid=$!
pids+=($ll_pid)

wire=chat # the client wire of the requests below: chat, or messages (Anthropic Messages)
auth=()   # the gateway key header, for the instances with one
body() { # $1: model, $2: stream
    if [[ $wire == messages ]]; then
        printf '{"model":"%s","stream":%s,"max_tokens":256,"messages":[{"role":"user","content":"Weather in Paris and Tokyo?"}],"tools":[{"name":"get_weather","input_schema":{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string"}}}}]}' "$1" "$2"
    else
        printf '{"model":"%s","stream":%s,"messages":[{"role":"user","content":"Weather in Paris and Tokyo?"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string"}}}}}]}' "$1" "$2"
    fi
}
route() { if [[ $wire == messages ]]; then echo /v1/messages; else echo /v1/chat/completions; fi; }
ready() { # $1: base URL
    for _ in $(seq 300); do
        if curl -s -o /dev/null -w '%{http_code}' -H 'content-type: application/json' "${auth[@]}" \
            -d "$(body up false)" "$1/v1/chat/completions" | grep -q 200; then
            return 0
        fi
        sleep 0.2
    done
    echo "not ready: $1" >&2
    tail -n 5 "$dir"/*.log >&2
    return 1
}
ready "$up"
ready "http://127.0.0.1:$bp_port"
ready "http://127.0.0.1:$tw_port"
if [[ $ts_pid ]]; then ready "http://127.0.0.1:$ts_port"; fi
auth=(-H "authorization: Bearer $gateway_key")
ready "http://127.0.0.1:$tm_port"
ready "http://127.0.0.1:$tr_port"
auth=()
ready "http://127.0.0.1:$ll_port"

# Resident memory (KiB) of a process and its children.
rss() {
    local total=0 p
    for p in $1 $(pgrep -P "$1" || true); do
        total=$((total + $(awk '/VmRSS/ {print $2}' "/proc/$p/status" 2>/dev/null || echo 0)))
    done
    echo $total
}
declare -A idle
# (An empty $ts_pid is no word.)
for p in $bp_pid $tw_pid $ts_pid $tm_pid $tr_pid $ll_pid; do idle[$p]=$(rss "$p"); done

if oha --help | grep -q -- '--output-format'; then json=(--output-format json); else json=(-j); fi
# oha run: prints "p50_ms p99_ms rps success_rate".
load() { # $1: URL, $2: stream, then oha flags
    local url=$1 stream=$2
    shift 2
    oha --no-tui "${json[@]}" -z "${secs}s" "$@" -m POST -H 'content-type: application/json' \
        "${auth[@]}" -d "$(body up "$stream")" "$url$(route)" |
        python3 -c 'import json,sys; r=json.load(sys.stdin); p=r["latencyPercentiles"]; s=r["summary"]
print("%.3f %.3f %.0f %.3f" % (p["p50"]*1000, p["p99"]*1000, s["requestsPerSec"], s["successRate"]))'
}
# Median time to first byte (ms) of $n sequential streamed requests on one kept-alive
# connection (one curl for all, so neither connecting nor starting curl is counted).
ttfb() {
    local urls=() i
    for i in $(seq "$n"); do urls+=(-o /dev/null "$1$(route)"); done
    curl -s -w '%{time_starttransfer}\n' -H 'content-type: application/json' "${auth[@]}" \
        -d "$(body up true)" "${urls[@]}" |
        sort -n | awk '{a[NR]=$1} END {printf "%.3f\n", a[int((NR+1)/2)]*1000}'
}
# Extra resident memory per open stream (KiB): $streams held streams at once.
per_stream() { # $1: URL, $2: pid
    local cpids=() p before
    before=$(rss "$2")
    for _ in $(seq "$streams"); do
        curl -s -N -o /dev/null -m 30 -H 'content-type: application/json' "${auth[@]}" \
            -d "$(body hold true)" "$1$(route)" &
        cpids+=($!)
    done
    sleep 5
    local held
    held=$(rss "$2")
    for p in "${cpids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait "${cpids[@]}" 2>/dev/null || true
    echo $(((held - before) / streams))
}

# Each path: its URL, client wire, process, and whether it needs the gateway key.
declare -A lat ttf rps srps mem
whos=(direct bare toolwire toolwire-cross limit-memory limit-redis litellm)
if [[ $ts_pid ]]; then whos+=(sys sys-cross); fi
for who in "${whos[@]}"; do
    wire=chat auth=() pid=
    case $who in
        direct) url=$up ;;
        bare) url="http://127.0.0.1:$bp_port" pid=$bp_pid ;;
        toolwire) url="http://127.0.0.1:$tw_port" pid=$tw_pid ;;
        toolwire-cross) url="http://127.0.0.1:$tw_port" wire=messages pid=$tw_pid ;;
        sys) url="http://127.0.0.1:$ts_port" pid=$ts_pid ;;
        sys-cross) url="http://127.0.0.1:$ts_port" wire=messages pid=$ts_pid ;;
        limit-memory) url="http://127.0.0.1:$tm_port" pid=$tm_pid ;;
        limit-redis) url="http://127.0.0.1:$tr_port" pid=$tr_pid ;;
        litellm) url="http://127.0.0.1:$ll_port" pid=$ll_pid ;;
    esac
    if [[ $who == limit-* ]]; then auth=(-H "authorization: Bearer $gateway_key"); fi
    oha --no-tui -z 2s -c 8 -m POST -H 'content-type: application/json' "${auth[@]}" \
        -d "$(body up false)" "$url$(route)" >/dev/null # warm up
    lat[$who]=$(load "$url" false -q "$rate" -c 32)
    ttf[$who]=$(ttfb "$url")
    rps[$who]=$(load "$url" false -c 32)
    srps[$who]=$(load "$url" true -c 32)
    if [[ $pid ]]; then mem[$who]=$(per_stream "$url" "$pid"); fi
done

read -r d50 d99 _ _ <<<"${lat[direct]}"
read -r _ _ drps _ <<<"${rps[direct]}"
read -r _ _ dsrps _ <<<"${srps[direct]}"
dttfb=${ttf[direct]}
row() { # $1: path, $2: its process, $3: the name shown
    local p50 p99 got ok r sr
    read -r p50 p99 got ok <<<"${lat[$1]}"
    read -r _ _ r _ <<<"${rps[$1]}"
    read -r _ _ sr _ <<<"${srps[$1]}"
    printf '| %s | %.2f ms | %.2f ms | %s/s (%.0f%% ok) | %.2f ms | %s | %s | %.1f MiB | %s KiB |\n' \
        "$3" "$(echo "$p50 - $d50" | bc)" "$(echo "$p99 - $d99" | bc)" "$got" "$(echo "$ok * 100" | bc)" \
        "$(echo "${ttf[$1]} - $dttfb" | bc)" "$r" "$sr" "$(echo "${idle[$2]} / 1024" | bc -l)" "${mem[$1]}"
}
p50() { read -r p _ _ _ <<<"${lat[$1]}" && echo "$p"; }
litellm_version=$("$venv/bin/pip" show litellm 2>/dev/null | awk '/^Version:/ {print $2}')
cpu=$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)
echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores ($cpu), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "LiteLLM $litellm_version (1 worker), $(oha --version), $(redis-server --version | cut -d' ' -f1-3), toolwire $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "upstream alone: p50 ${d50} ms, p99 ${d99} ms at ${rate}/s; first byte ${dttfb} ms; ${drps} req/s, ${dsrps} streams/s at 32 connections"
echo
echo "| gateway | added p50 at ${rate}/s | added p99 | achieved | added first byte (stream) | req/s at 32 conns | streams/s at 32 conns | RSS idle | RSS per open stream |"
echo "|---|---|---|---|---|---|---|---|---|"
row bare $bp_pid "the floor: a bare axum + reqwest proxy (examples/bare_proxy.rs)"
row toolwire $tw_pid "toolwire, same wire (Chat to OpenAI-compatible, passed through)"
row toolwire-cross $tw_pid "toolwire, across wires (Messages to Chat, translated)"
if [[ $ts_pid ]]; then
    row sys "$ts_pid" "toolwire, system allocator, same wire"
    row sys-cross "$ts_pid" "toolwire, system allocator, across wires"
fi
row limit-memory $tm_pid "toolwire, same wire, key with limits in memory"
row limit-redis $tr_pid "toolwire, same wire, key with limits in Redis"
row litellm $ll_pid "LiteLLM"
echo
printf 'limiter added at p50 over the same route without a key: in memory %.3f ms, Redis %.3f ms\n' \
    "$(echo "$(p50 limit-memory) - $(p50 toolwire)" | bc)" "$(echo "$(p50 limit-redis) - $(p50 toolwire)" | bc)"
