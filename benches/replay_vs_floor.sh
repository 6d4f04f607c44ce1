#!/usr/bin/env bash
# Whole-process time and peak memory of `toolwire replay` against the floor program on the
# bench workloads; prints the Markdown table the README publishes.
# Run: bash benches/replay_vs_floor.sh   (needs GNU time at /usr/bin/time)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --features cli --bin toolwire --example floor
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
target/release/examples/floor --generate "$dir"
runs=${RUNS:-5}
# Best of $runs wall-clock seconds and the peak resident set (KB) of one command.
measure() {
    local best="" rss=0
    for _ in $(seq "$runs"); do
        /usr/bin/time -f "%e %M" -o "$dir/t" "$@" >/dev/null
        read -r secs kb <"$dir/t"
        if [[ -z $best ]] || (( $(echo "$secs < $best" | bc) )); then best=$secs; fi
        (( kb > rss )) && rss=$kb
    done
    echo "$best $rss"
}
echo "| workload | SSE size | floor time | toolwire time | ratio | floor peak | toolwire peak |"
echo "|---|---|---|---|---|---|---|"
for name in one_call_144k one_call_288k 16_calls_8k 16_calls_16k; do
    f="$dir/$name.sse"
    size=$(( $(stat -c %s "$f") / 1024 ))
    read -r ft fm < <(measure target/release/examples/floor "$f")
    read -r tt tm < <(measure target/release/toolwire replay --provider openai "$f")
    ratio=$(echo "scale=2; $tt / $ft" | bc)
    echo "| $name | ${size} KiB | ${ft} s | ${tt} s | ${ratio}× | $(( fm / 1024 )) MiB | $(( tm / 1024 )) MiB |"
done
