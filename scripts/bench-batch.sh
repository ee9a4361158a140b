#!/usr/bin/env bash
# Single-thread batched writes, sett against RocksDB's release build, both
# through their C APIs (ffi/bench/batchfill.c: db_bench's fillrandom with
# --batch_size=1000, 16-byte keys, 100-byte values, WAL on, no sync, 64 MiB
# memtables, the flush of what is left in memory on the clock). ROUNDS rounds,
# engines alternating within each, a fresh directory per run. Writes
# results/batch-write.md (or $BATCH_OUT): medians with ranges, and the ratio
# called ahead/behind only where the ranges do not overlap.
#   scripts/bench-batch.sh [N] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-2000000}
rounds=${2:-3}
out_md=${BATCH_OUT:-results/batch-write.md}
bin=./target/bench/batchfill
dir=${BATCH_DIR:-/var/tmp}
tmp=$(mktemp -d "$dir/bench-batch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
results=$tmp/results.txt
engines=(sett rocksdb)
for r in $(seq "$rounds"); do
	for e in "${engines[@]}"; do
		echo "round $r: $e" >&2
		LD_LIBRARY_PATH=target/release "$bin" "$e" "$tmp/$e-$r" "$n" | tee -a "$results" >&2
		rm -rf "${tmp:?}/$e-$r"
	done
done

# Entries per second of one engine's runs, sorted.
rates() { awk -v e="$1" '$1 == "RESULT" && $2 == e {print $5}' "$results" | sort -n; }
median() { awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
for e in "${engines[@]}"; do
	[ "$(rates "$e" | wc -l)" -eq "$rounds" ] || { echo "bench-batch: $e did not finish every round" >&2; exit 1; }
done
s_med=$(rates sett | median); r_med=$(rates rocksdb | median)
s_lo=$(rates sett | head -1); s_hi=$(rates sett | tail -1)
r_lo=$(rates rocksdb | head -1); r_hi=$(rates rocksdb | tail -1)
verdict=$(awk -v sl="$s_lo" -v sh="$s_hi" -v rl="$r_lo" -v rh="$r_hi" -v r="$rounds" -v sm="$s_med" -v rm="$r_med" 'BEGIN {
	if (r == 1) { q = sm / rm; print (q > 1.25 ? "ahead" : (q < 0.8 ? "behind" : "tie")); exit }
	if (sl > rh) print "ahead"; else if (sh < rl) print "behind"; else print "tie" }')
ratio=$(awk -v a="$s_med" -v b="$r_med" 'BEGIN {printf "%.2f", a / b}')
k() { awk -v x="$1" 'BEGIN {printf "%.0fk", x / 1000}'; }
rocks_version=$(awk '/^Version:/ {print $2}' target/pkgconfig/rocksdb-release.pc)
{
	echo "# Single-thread batched writes: sett against RocksDB"
	echo
	echo "Run $(date -u '+%Y-%m-%d %H:%M') UTC at commit $(git rev-parse --short HEAD) on $(nproc) cores, \`make bench-batch\`: $n entries of 16-byte random keys and 100-byte incompressible values in 1000-entry batches from one thread, WAL on, no sync, 64 MiB memtables, no compression, everything else at each engine's defaults; the clock runs until what is left in memory is flushed. $rounds rounds, the engines alternating, a fresh directory under $dir each run. RocksDB $rocks_version is the release build of \`scripts/rocksdb-release.sh\` (NDEBUG), through its C API as sett is through its own: the program is \`ffi/bench/batchfill.c\`, db_bench's fillrandom with --batch_size=1000 (the RocksDB source this project builds from does not ship db_bench)."
	echo
	echo "| engine | entries/s, median | range | runs, sorted |"
	echo "|---|---:|---:|---|"
	echo "| sett | $(k "$s_med") | $(k "$s_lo")–$(k "$s_hi") | $(rates sett | while read -r x; do k "$x"; printf ' '; done | sed 's/ $//') |"
	echo "| RocksDB $rocks_version | $(k "$r_med") | $(k "$r_lo")–$(k "$r_hi") | $(rates rocksdb | while read -r x; do k "$x"; printf ' '; done | sed 's/ $//') |"
	echo
	echo "sett ÷ RocksDB, medians: **${ratio}x, $verdict** (ahead or behind only where the ranges do not overlap)."
} > "$out_md"
cat "$out_md"
