#!/bin/bash
# redis-benchmark against sett-server and Debian's redis-server (AOF on) at the
# same appendfsync, 50 clients, 100 B and 1 KiB values; then the kill -9 loop.
# Writes results/server.md. Usage: server/bench/bench.sh [OUT] (N, RUNS, CYCLES in the environment).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/results/server.md}
bin=$root/target/release/sett-server
N_EVERYSEC=${N:-100000}
N_ALWAYS=${N_ALWAYS:-50000}
RUNS=${RUNS:-3}
CYCLES=${CYCLES:-20}
# redis-py for the kill -9 loop: the virtualenv make server-test uses, made if missing.
venv=$root/target/tmp/server-venv
py=${PYTHON:-$venv/bin/python}
if ! "$py" -c 'import redis' 2>/dev/null; then
	python3 -m venv "$venv" && "$venv/bin/pip" install -q redis==8.1.0
	py=$venv/bin/python
fi
tmp=$(mktemp -d)
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
# A port picked up front and released (another process may take it before the
# server binds it, and the start check fails the run unless that process answers
# PING): redis-server reads
# --port 0 as "no TCP listener", and both stores are measured on the same port.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

start() { # store mode
	rm -rf "$tmp/data" && mkdir -p "$tmp/data"
	if [ "$1" = sett ]; then
		"$bin" --dir "$tmp/data" --port "$port" --appendfsync "$2" --parent-pid $$ >/dev/null 2>"$tmp/server.log" &
	else
		redis-server --port "$port" --bind 127.0.0.1 --dir "$tmp/data" --appendonly yes --appendfsync "$2" \
			--save "" --daemonize no --logfile "$tmp/server.log" &
	fi
	pid=$!
	for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && return; sleep 0.1; done
	echo "$1 did not start" >&2; cat "$tmp/server.log" >&2; exit 1
}
stop() { kill "$pid"; wait "$pid" || true; pid=""; }

load=$(cut -d' ' -f1-3 /proc/loadavg)
echo "store,fsync,size,run,test,rps,avg_ms,min_ms,p50_ms,p95_ms,p99_ms,max_ms" > "$tmp/all.csv"
for mode in everysec always; do
	n=$N_EVERYSEC; [ $mode = always ] && n=$N_ALWAYS
	for size in 100 1024; do
		for run in $(seq "$RUNS"); do
			order="sett redis"; [ $((run % 2)) = 0 ] && order="redis sett"
			for store in $order; do
				start $store $mode
				redis-benchmark -h 127.0.0.1 -p "$port" -c 50 -n "$n" -d "$size" -r 100000 -t set,get --csv 2>/dev/null |
					tail -n +2 | tr -d '"' | sed "s/^/$store,$mode,$size,$run,/" >> "$tmp/all.csv"
				stop
				echo "done: $store $mode ${size}B run $run" >&2
			done
		done
	done
done
kill9=$("$py" "$root/server/bench/kill9.py" "$bin" "$CYCLES")

{
	echo "# sett-server against redis-server"
	echo
	echo "Written by \`server/bench/bench.sh\` on $(date -u +%Y-%m-%d) at commit $(git -C "$root" rev-parse --short HEAD)."
	echo "redis-benchmark ($(redis-benchmark --version | cut -d' ' -f2)), 50 clients, random keys out of 100000 (\`-r\`), SET then GET;"
	echo "$N_EVERYSEC requests per test at everysec, $N_ALWAYS at always; $RUNS runs per cell, a fresh empty"
	echo "directory for each, the two servers alternating which goes first. redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/')"
	echo "(Debian) with \`--appendonly yes --appendfsync MODE --save ''\`; sett-server (release build) with"
	echo "\`--appendfsync MODE\`. Both on loopback, on a 2-core machine shared with other jobs: the figures"
	echo "are noisy; a difference inside the ranges is a tie. Throughput is the median of the runs (min-max);"
	echo "p50 and p99 latencies are medians of the runs' figures, in ms. Load average when the runs"
	echo "began: $load; at the end: $(cut -d' ' -f1-3 /proc/loadavg) (other jobs share the machine)."
	echo
	echo "| fsync | value | test | redis-server req/s | sett-server req/s | sett/redis | redis p50 / p99 | sett p50 / p99 |"
	echo "|---|---|---|---|---|---|---|---|"
	python3 - "$tmp/all.csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
def cell(store, mode, size, test, field):
    return [float(r[field]) for r in rows if (r["store"], r["fsync"], r["size"], r["test"]) == (store, mode, size, test)]
for mode in ("everysec", "always"):
    for size in ("100", "1024"):
        for test in ("SET", "GET"):
            rr, sr = cell("redis", mode, size, test, "rps"), cell("sett", mode, size, test, "rps")
            if not rr or not sr:
                continue
            fmt = lambda v: f"{statistics.median(v):,.0f} ({min(v):,.0f}-{max(v):,.0f})"
            lat = lambda s: f"{statistics.median(cell(s, mode, size, test, 'p50_ms')):.2f} / {statistics.median(cell(s, mode, size, test, 'p99_ms')):.2f}"
            print(f"| {mode} | {size} B | {test} | {fmt(rr)} | {fmt(sr)} | {statistics.median(sr) / statistics.median(rr):.2f} | {lat('redis')} | {lat('sett')} |")
PY
	echo
	echo "## kill -9"
	echo
	echo "\`server/bench/kill9.py\`: sett-server with \`--appendfsync always\`, four writer connections (SET of"
	echo "sequential keys, INCR of a counter each), SIGKILL at a random moment 0.3-1.5 s into each cycle, restart,"
	echo "every acknowledged SET read back and each counter at its acknowledged value or one more."
	echo "A SIGKILL kills the process, not the machine: this checks that the server acknowledges nothing"
	echo "it has not handed to the engine; the engine's power-loss tests (core/tests/power_loss.rs) cover fsync."
	echo
	echo "Result: $kill9"
	echo
	echo "Raw figures (every run):"
	echo
	echo '```'
	cat "$tmp/all.csv"
	echo '```'
} > "$out"
echo "wrote $out" >&2
