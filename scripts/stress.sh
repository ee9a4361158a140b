#!/usr/bin/env bash
# The reliability suite for STRESS_SECONDS (default 1800), then one summary table:
# crash loops with and without sync, the bank test, simulated power cuts and
# faults after the fact, a transaction history checker, the corruption sweeps,
# power cuts inside GC, backup, flatten, DropPrefix and bulk load with writers
# beside them, the full-disk test, fault injection, and libFuzzer on every decoder and on
# random operation sequences when cargo-fuzz and a nightly toolchain are there.
# Each row says what its part measured; a part whose command failed says FAILED.
set -euo pipefail
cd "$(dirname "$0")/.."
T=${STRESS_SECONDS:-1800}
part=$((T / 5))
sett_bench=./target/release/sett-bench
log=target/stress
mkdir -p "$log"

# A failing part is reported in the table (and the exit status), not fatal.
status=0
declare -A ok
run() { # run NAME COMMAND...: ok[NAME] is "ok" or "FAILED"
  local name=$1
  shift
  if "$@"; then ok[$name]=ok; else ok[$name]=FAILED; status=1; fi
}
run crash_sync bash -c "$sett_bench crashloop --seconds $part --sync | tee $log/crash-sync.txt; exit \${PIPESTATUS[0]}"
run crash_nosync bash -c "$sett_bench crashloop --seconds $part | tee $log/crash-nosync.txt; exit \${PIPESTATUS[0]}"
run bank bash -c "$sett_bench bank --seconds $part --threads 4 | tee $log/bank.txt; exit \${PIPESTATUS[0]}"
run power bash -c "POWER_LOSS_SCALE=\${POWER_LOSS_SCALE:-6} cargo test -q --release -p sett --test power_loss -- --nocapture 2>&1 | tee $log/power.txt; exit \${PIPESTATUS[0]}"
run maintenance bash -c "POWER_LOSS_SCALE=\${POWER_LOSS_SCALE:-6} cargo test -q --release -p sett --test concurrent_maintenance -- --nocapture --test-threads 1 2>&1 | tee $log/maintenance.txt; exit \${PIPESTATUS[0]}"
run history bash -c "HISTORY_TXNS=\${HISTORY_TXNS:-3000} cargo test -q --release -p sett --test history -- --nocapture 2>&1 | tee $log/history.txt; exit \${PIPESTATUS[0]}"
run corruption bash -c "cargo test -q --release -p sett --test corruption_sweep --test corruption -- --nocapture 2>&1 | tee $log/corruption.txt; exit \${PIPESTATUS[0]}"
run metamorphic bash -c "METAMORPHIC_OPS=\${METAMORPHIC_OPS:-2000} METAMORPHIC_SEEDS=\${METAMORPHIC_SEEDS:-$((part / 30 + 1))} METAMORPHIC_FIRST_SEED=\${METAMORPHIC_FIRST_SEED:-$(date +%s)} cargo test -q --release -p sett --test metamorphic -- --nocapture 2>&1 | tee $log/metamorphic.txt; exit \${PIPESTATUS[0]}"
run fault bash -c "cargo test -q --release -p sett --features fault-injection --test fault -- --nocapture 2>&1 | tee $log/fault.txt; exit \${PIPESTATUS[0]}"
: >"$log/full-disk.txt"
ok[full]=ok
for _ in $(seq 10); do
  cargo test -q --release -p sett --test full_disk -- --nocapture 2>&1 | tee -a "$log/full-disk.txt" || { ok[full]=FAILED; status=1; }
done

fuzz_runs=0
fuzz_detail=""
fuzz_status="not run (needs cargo-fuzz and a nightly toolchain)"
if cargo fuzz --version >/dev/null 2>&1 && cargo +nightly --version >/dev/null 2>&1; then
  fuzz_status="ok"
  for target in decode backup_stream ops; do
    # Operation sequences need room: libFuzzer would otherwise start at 4 bytes.
    extra=""
    [ "$target" = ops ] && extra="-max_len=2048"
    if ! (cd fuzz && cargo +nightly fuzz run "$target" -- -max_total_time=$((part / 2)) $extra 2>&1) | tee "$log/fuzz-$target.txt"; then
      fuzz_status="CRASH in $target (see fuzz/artifacts)"
      status=1
    fi
    n=$(grep -o 'Done [0-9]* runs' "$log/fuzz-$target.txt" | grep -o '[0-9]*' | tail -1 || true)
    fuzz_runs=$((fuzz_runs + ${n:-0}))
    fuzz_detail="$fuzz_detail $target ${n:-0};"
  done
fi

verdict() { # verdict NAME TEXT: TEXT if the part passed, else FAILED
  if [ "${ok[$1]}" = ok ]; then echo "$2"; else echo "FAILED (see $log)"; fi
}
num() { grep -o "[0-9]* $2" "$1" | grep -o '^[0-9]*' | tail -1; }
cycles() { echo "$(num "$1" 'cycles in') cycles ($(num "$1" 'cycles with no acknowledgement') with no acknowledgement)"; }
acks() { echo "$(num "$1" 'batches acknowledged') batches acknowledged, $(num "$1" 'batches verified present') verified present"; }
fails() { grep -o '[0-9]* failures' "$1" | grep -o '[0-9]*'; }
flips=$(grep -o '[0-9]* reported as corruption' "$log/corruption.txt" | grep -o '^[0-9]*' | paste -sd+ | bc)
harmless=$(grep -oE '[0-9]+ (flips|cuts) harmless|[0-9]+ flips recovered a prefix' "$log/corruption.txt" | grep -o '^[0-9]*' | paste -sd+ | bc)
bank=$(grep -o 'bank: [0-9]* transfers.*' "$log/bank.txt" | tail -1)
echo
echo "| part | runs | failures / data lost |"
echo "|---|---:|---:|"
echo "| crash loop, sync on (SIGKILL) | $(cycles "$log/crash-sync.txt"), $(acks "$log/crash-sync.txt") | $(verdict crash_sync "$(fails "$log/crash-sync.txt") failures") |"
echo "| crash loop, sync off (SIGKILL: every acknowledged batch must survive too) | $(cycles "$log/crash-nosync.txt"), $(acks "$log/crash-nosync.txt") | $(verdict crash_nosync "$(fails "$log/crash-nosync.txt") failures") |"
echo "| bank test | ${bank:-?} | $(verdict bank "$(grep -c VIOLATION "$log/bank.txt" || true) violations") |"
cuts=$(grep -o 'POWER_CUTS [^:]*: [0-9]* cuts' "$log/power.txt" | grep -o '[0-9]* cuts' | grep -o '[0-9]*' | paste -sd+ | bc || echo 0)
faultruns=$(grep -o 'FAULTS: [0-9]* runs' "$log/power.txt" | grep -o '[0-9]*' || echo 0)
echo "| power cuts (SimFs: unsynced data and directory entries dropped, torn pages; both sync modes) | ${cuts:-0} cuts | $(verdict power "0 acknowledged writes lost, 0 failed opens") |"
echo "| faults after the fact (short writes, failed fsync, create/rename/dir-sync failures) | ${faultruns:-0} runs | $(verdict power "0 acknowledged writes lost, every one refused later writes") |"
mcuts=$(grep -o 'MAINTENANCE_CUTS [^:]*: [0-9]* cuts' "$log/maintenance.txt" | grep -o '[0-9]* cuts' | grep -o '[0-9]*' | paste -sd+ | bc || echo 0)
mchecks=$(grep -o '[0-9]* key checks' "$log/maintenance.txt" | grep -o '^[0-9]*' | paste -sd+ | bc || echo 0)
mbeside=$(grep -o 'MAINTENANCE_BESIDE_WRITERS: .* drop_prefix' "$log/maintenance.txt" | sed 's/MAINTENANCE_BESIDE_WRITERS: //' || true)
mbulk=$(grep -o 'BULK_BESIDE_WRITERS: [0-9]* rounds, [0-9]* loads done, [0-9]* refused' "$log/maintenance.txt" | sed 's/BULK_BESIDE_WRITERS: //' || true)
echo "| maintenance beside writers (GC, backup restored and checked, flatten, DropPrefix; bulk load racing writers) | ${mbeside:-?}; bulk: ${mbulk:-?} | $(verdict maintenance "0 acknowledged writes lost, 0 older values seen") |"
echo "| power cuts inside GC, backup, flatten, DropPrefix, bulk load (SimFs, synced writers before or beside) | ${mcuts:-0} cuts, ${mchecks:-0} key checks | $(verdict maintenance "0 acknowledged writes lost, 0 failed opens, 0 partial bulk loads, 0 wrong restores") |"
hist=$(grep -o 'HISTORY: [0-9]* transactions committed, [0-9]* aborted appends' "$log/history.txt" | sed 's/HISTORY: //' || true)
echo "| transaction history (list-append, 4 clients on 5 keys, Elle-style cycle check) | ${hist:-?} | $(verdict history "0 violations") |"
echo "| corruption sweep (flips and cuts in every file type) | $((flips + harmless)) damaged copies, $flips reported as corruption | $(verdict corruption "0 wrong values") |"
meta=$(grep -c 'METAMORPHIC: sequence' "$log/metamorphic.txt" || true)
metaops=$(grep -o 'METAMORPHIC: sequence [0-9]*: [0-9]* operations' "$log/metamorphic.txt" | grep -o '[0-9]* operations' | grep -o '[0-9]*' | paste -sd+ | bc || echo 0)
echo "| metamorphic (one operation sequence under random option sets, read for read) | $meta sequences, ${metaops:-0} operations, base + 3 option sets each (replay one: METAMORPHIC_FIRST_SEED=N METAMORPHIC_SEEDS=1) | $(verdict metamorphic "0 differing reads") |"
echo "| fuzzing | $fuzz_runs executions ($fuzz_detail) | $fuzz_status |"
faults=$(grep -o '[0-9]* faults injected' "$log/fault.txt" | grep -o '^[0-9]*' | paste -sd+ | bc || echo 0)
full=$(grep -c 'disk full after' "$log/full-disk.txt" || true)
fullfail=$(grep -c 'FAILED\|panicked' "$log/full-disk.txt" || true)
echo "| fault injection (EIO/ENOSPC at the Nth write or fsync) | $faults faults | $(verdict fault "0 acknowledged writes lost") |"
echo "| full disk (6 MiB tmpfs filled while writing, space freed, reopened) | $full runs ($(grep -c SKIPPED "$log/full-disk.txt" || true) skipped) | $(verdict full "$fullfail failed") |"
exit $status
