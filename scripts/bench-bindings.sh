#!/usr/bin/env bash
# Point get, put, batch put and iteration through each binding (Rust, C, Go,
# Python) on the same in-memory data set, so that each layer's cost shows.
# Every program runs ROUNDS times (interleaved) on a fresh directory; the table
# keeps each phase's best round. Writes results/bindings.md (or $BINDINGS_OUT).
#   scripts/bench-bindings.sh [N] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-300000}
rounds=${2:-2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
declare -A cmd=(
  [rust]="./target/release/sett-bench ops"
  [c]="./target/bench/ops"
  [go]="./target/go/opsbench"
  [python]="./target/venv/bin/python bindings-python/bench/ops.py"
)
bindings=(rust c go python)
out=$tmp/results.txt
for r in $(seq "$rounds"); do
  for b in "${bindings[@]}"; do
    echo "round $r: $b" >&2
    ${cmd[$b]} "$tmp/$b-$r" "$n" | tee -a "$out" >&2
    rm -rf "${tmp:?}/$b-$r"
  done
done

best() { grep "^RESULT $1 $2 " "$out" | awk '{print $4}' | sort -n | head -1; }
{
  echo "# sett through each binding"
  echo
  echo "Run $(date -u '+%Y-%m-%d %H:%M') UTC on $(hostname) ($(nproc) cores), \`make bench-bindings\`: $n keys of 15 bytes with 100-byte values (the data set stays in memory), one thread, best of $rounds interleaved rounds, each on a fresh directory. Phases: batch = 1000-entry batches; put = one put per key, overwriting; get = lookups of existing keys in a fixed pseudo-random order, value copied out; iterate = one forward scan with values. Keys and values are made before the clock starts."
  echo
  echo "| phase | Rust ns/op | C ns/op | Go ns/op | Python ns/op | C − Rust | Go − Rust | Python − Rust |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|"
  for p in batch put get iterate; do
    r=$(best rust $p); c=$(best c $p); g=$(best go $p); y=$(best python $p)
    echo "| $p | $r | $c | $g | $y | $((c - r)) | $((g - r)) | $((y - r)) |"
  done
  echo
  echo "The last three columns are what each layer adds per operation (negative: within run-to-run noise)."
} | tee "${BINDINGS_OUT:-results/bindings.md}"
