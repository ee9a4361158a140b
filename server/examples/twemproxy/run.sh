#!/bin/sh
# Starts the recipe of nutcracker.yml on loopback: three sett-server nodes under
# DIR (default ./sett-shards) and twemproxy on 127.0.0.1:22121. Ctrl-C stops all.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bin=${SETT_SERVER:-sett-server}
dir=${1:-./sett-shards}
command -v nutcracker >/dev/null || { echo "nutcracker not found: apt-get install nutcracker" >&2; exit 1; }
pids=""
trap 'kill $pids 2>/dev/null; wait' INT TERM EXIT
for i in 1 2 3; do
	mkdir -p "$dir/sett$i"
	"$bin" --dir "$dir/sett$i" --port 700$i --appendfsync everysec & pids="$pids $!"
done
nutcracker -c "$here/nutcracker.yml" -s 22222 -a 127.0.0.1 -o "$dir/nutcracker.log" & pids="$pids $!"
echo "twemproxy on 127.0.0.1:22121 (try: redis-cli -p 22121 set {user42}:name ada)"
wait
