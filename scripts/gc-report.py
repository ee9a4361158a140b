"""Turns the RESULT lines of `sett-bench gc` runs into results/auto-gc.md."""

import json
import platform
import subprocess
import sys
import time


def main() -> None:
    rows = [
        json.loads(line.split(" ", 1)[1])
        for line in open(sys.argv[1])
        if line.startswith("RESULT ")
    ]
    commit = subprocess.run(
        ["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    print("# Disk space under overwrites and deletes: the background value-log GC\n")
    print(
        f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {platform.node()}, "
        f"commit {commit}, by `make bench-gc` (`sett-bench gc`, release build). "
        "Each run writes its live set, then overwrites every key (a tenth deleted and "
        "put back first) until the live data went through the number of passes below, "
        "with default options except `vlog_gc_ratio` (0 turns the background GC off). "
        "GC is never called; after the writes one flush, then a wait of up to 60 s for "
        "the directory to come within 1.5x of the live data (settle s), and on until "
        "no GC or compaction is pending and the size is still for a second (settled). "
        "Directory size sampled "
        "every 200 ms: the curves are in `results/auto-gc-<value size>-<ratio>.csv` "
        "and plotted by `bindings-python/notebooks/auto_gc.ipynb`.\n"
    )
    print(
        "| value size | vlog_gc_ratio | live MiB | written ÷ live | write MB/s "
        "| largest directory while writing ÷ live | settled ÷ live | settle s "
        "| GC files rewritten | GC files deleted | GC reclaimed MiB | GC s |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        live = r["live_bytes"]
        print(
            f"| {r['value_size']} B | {r['gc_ratio']:g} | {live / 2**20:.0f} "
            f"| {r['bytes_written'] / live:.1f} | {r['write_mb_per_s']:.0f} "
            f"| {r['peak_ratio_writing']:.2f} | {r['settled_ratio']:.2f} "
            f"| {r['settle_seconds']:.1f} | {r['gc_files_rewritten']} "
            f"| {r['gc_files_deleted']} | {r['gc_bytes_reclaimed'] / 2**20:.0f} "
            f"| {r['gc_seconds']:.1f} |"
        )


if __name__ == "__main__":
    main()
