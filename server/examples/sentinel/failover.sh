#!/usr/bin/env bash
# Failover of sett-server by Redis Sentinel, on loopback: 1 master, 2
# replicas, 3 sentinels (quorum 2). Writes are acknowledged with WAIT 1; the
# master is killed with SIGKILL; once Sentinel has promoted a replica, every
# acknowledged write is looked up on the new master.
#
#   server/examples/sentinel/failover.sh [path/to/sett-server]
#
# Needs redis-sentinel and redis-cli (Debian: redis-sentinel, redis-tools).
# Everything runs in a temporary directory and is stopped by pid on exit.
set -euo pipefail
BIN=${1:-target/release/sett-server}
[ -x "$BIN" ] || { echo "no sett-server at $BIN (cargo build --release -p sett-server)" >&2; exit 2; }
for t in redis-sentinel redis-cli python3; do
  command -v $t >/dev/null || { echo "$t is missing" >&2; exit 2; }
done
W=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$W"
}
trap cleanup EXIT

# A port the kernel hands out now (Sentinel cannot listen on port 0).
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
listening_port() { sed -n 's/.*listening on .*:\([0-9]*\)$/\1/p' "$1" | head -1; }

# start NAME ARGS...: a sett-server on a port of its own choosing.
start() {
  local name=$1; shift
  "$BIN" --dir "$W/$name" --bind 127.0.0.1 --port 0 --parent-pid $$ "$@" \
    > "$W/$name.out" 2> "$W/$name.err" &
  PIDS+=($!); eval "${name}_pid=$!"
  for _ in $(seq 100); do
    [ -n "$(listening_port "$W/$name.out")" ] && break; sleep 0.05
  done
  eval "${name}_port=$(listening_port "$W/$name.out")"
}
start master
start r1 --replicaof "127.0.0.1 $master_port"
start r2 --replicaof "127.0.0.1 $master_port"
echo "sett-server master :$master_port, replicas :$r1_port :$r2_port"

SENTINELS=()
for s in 1 2 3; do
  port=$(free_port)
  cat > "$W/sentinel$s.conf" <<CONF
port $port
bind 127.0.0.1
dir $W
sentinel monitor m 127.0.0.1 $master_port 2
sentinel down-after-milliseconds m 2000
sentinel failover-timeout m 10000
CONF
  redis-sentinel "$W/sentinel$s.conf" > "$W/sentinel$s.log" 2>&1 &
  PIDS+=($!); SENTINELS+=("$port")
done
S=${SENTINELS[0]}

# Sentinel learns the replicas from INFO and the other sentinels from hello messages.
for _ in $(seq 100); do
  info=$(redis-cli -p "$S" sentinel master m 2>/dev/null | paste - - || true)
  slaves=$(awk '$1=="num-slaves"{print $2}' <<<"$info")
  others=$(awk '$1=="num-other-sentinels"{print $2}' <<<"$info")
  [ "${slaves:-0}" = 2 ] && [ "${others:-0}" = 2 ] && break
  sleep 0.2
done
echo "sentinel sees ${slaves:-0} replicas and ${others:-0} other sentinels"
[ "${slaves:-0}" = 2 ] && [ "${others:-0}" = 2 ] || { echo "FAIL: discovery" >&2; exit 1; }

ACKED=()
for i in $(seq 1 300); do
  redis-cli -p "$master_port" set "k$i" "v$i" > /dev/null
  n=$(redis-cli -p "$master_port" wait 1 1000)
  [ "$n" -ge 1 ] && ACKED+=("$i")
done
acked=${#ACKED[@]}
echo "writes acknowledged by WAIT 1: $acked of 300"

kill -9 "$master_pid"
killed=$(date +%s.%N)
new=""
for _ in $(seq 300); do
  addr=$(redis-cli -p "$S" sentinel get-master-addr-by-name m | tail -1)
  if [ "$addr" != "$master_port" ]; then new=$addr; break; fi
  sleep 0.1
done
[ -n "$new" ] || { echo "FAIL: no new master" >&2; exit 1; }
awk -v a="$killed" -v b="$(date +%s.%N)" -v p="$new" 'BEGIN { printf "new master :%s, %.1f s after the kill\n", p, b - a }'

# The new master takes writes; the other replica follows it.
for _ in $(seq 100); do
  [ "$(redis-cli -p "$new" role | head -1)" = master ] && break; sleep 0.1
done
redis-cli -p "$new" set after-failover yes > /dev/null
missing=0
for i in "${ACKED[@]}"; do
  [ "$(redis-cli -p "$new" get "k$i")" = "v$i" ] || missing=$((missing + 1))
done
other=$r1_port; [ "$new" = "$r1_port" ] && other=$r2_port
for _ in $(seq 100); do
  [ "$(redis-cli -p "$other" get after-failover)" = yes ] && break; sleep 0.1
done
echo "acknowledged writes missing on the new master: $missing of $acked"
echo "the other replica follows :$(redis-cli -p "$other" info replication | sed -n 's/^master_port:\([0-9]*\).*/\1/p'), sees after-failover=$(redis-cli -p "$other" get after-failover), $(redis-cli -p "$other" info replication | grep -E '^sett_(full|partial)_syncs:' | tr -d '\r' | tr '\n' ' ')"
[ "$missing" = 0 ] && [ "$(redis-cli -p "$other" get after-failover)" = yes ] || { echo FAIL >&2; exit 1; }
echo PASS
