#!/usr/bin/env bash
# Whole-process time and peak memory of `toolwire replay` against the floor program on the
# bench workloads; prints the Markdown table the README publishes.
# Run: bash benches/replay_vs_floor.sh   (needs bash 5, bc, and GNU time at /usr/bin/time;
# RUNS=N sets the runs per program, best of N is kept)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --features cli --bin toolwire --example floor
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
target/release/examples/floor --generate "$dir"
runs=${RUNS:-11}
# Wall-clock milliseconds (microsecond clock) and peak resident set (KB) of one command run.
once() {
    local t0=$EPOCHREALTIME
    /usr/bin/time -f "%M" -o "$dir/t" "$@" >/dev/null
    local t1=$EPOCHREALTIME
    echo "$(echo "($t1 - $t0) * 1000" | bc) $(cat "$dir/t")"
}
# Instructions executed (valgrind's callgrind): repeatable whatever else the machine runs.
instructions() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null |
        sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
min() { if [[ -z $1 ]] || (( $(echo "$2 < $1" | bc) )); then echo "$2"; else echo "$1"; fi; }
echo "| workload | SSE size | floor time | toolwire time | ratio | instructions ratio | floor peak | toolwire peak |"
echo "|---|---|---|---|---|---|---|---|"
for name in one_call_144k one_call_288k 16_calls_8k 16_calls_16k; do
    f="$dir/$name.sse"
    size=$(( $(stat -c %s "$f") / 1024 ))
    ft="" tt="" fm=0 tm=0
    # Interleaved calls come from compatible servers (OpenAI's own endpoint never interleaves).
    url=""
    [[ $name == 16_calls_* ]] && url="--base-url http://127.0.0.1:8000/v1"
    # Interleaved, best of $runs each, so both see the same machine.
    for _ in $(seq "$runs"); do
        read -r ms kb < <(once target/release/examples/floor "$f")
        ft=$(min "$ft" "$ms"); (( kb > fm )) && fm=$kb
        read -r ms kb < <(once target/release/toolwire replay --provider openai $url "$f")
        tt=$(min "$tt" "$ms"); (( kb > tm )) && tm=$kb
    done
    ratio=$(echo "scale=2; $tt / $ft" | bc)
    iratio="(no valgrind)"
    if command -v valgrind >/dev/null; then
        fi=$(instructions target/release/examples/floor "$f")
        # shellcheck disable=SC2086
        ti=$(instructions target/release/toolwire replay --provider openai $url "$f")
        iratio="$(echo "scale=2; $ti / $fi" | bc)× ($(( ti / 1000000 ))M / $(( fi / 1000000 ))M)"
    fi
    printf '| %s | %s KiB | %.1f ms | %.1f ms | %s× | %s | %s MiB | %s MiB |\n' \
        "$name" "$size" "$ft" "$tt" "$ratio" "$iratio" $(( fm / 1024 )) $(( tm / 1024 ))
done
