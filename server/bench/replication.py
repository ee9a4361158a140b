"""Replication measured: sett-server against redis-server with replicas on one machine.

For each store (sett-server, Debian's redis-server with AOF), appendfsync mode
(everysec, always) and number of replicas (0, 1, 2): a master and its replicas,
all at the same settings, and redis-benchmark's SET load on the master. Beside
the load a probe writes a key on the master every 20 ms and times how long the
first replica takes to serve it: the replication lag. Then failover by Redis
Sentinel: 3 sentinels, kill -9 of the master, time until the sentinels name a
replica that answers ROLE as master.

Usage: python replication.py SETT_SERVER_BINARY OUT.md  (RUNS, N, N_ALWAYS in the environment)
"""

import atexit
import csv
import io
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import redis

RUNS = int(os.environ.get("RUNS", "3"))
N = {"everysec": int(os.environ.get("N", "100000")), "always": int(os.environ.get("N_ALWAYS", "30000"))}
VALUE = 100
CLIENTS = 50


# Every process started here, stopped by pid on exit (a failed run included):
# redis-server has no --parent-pid of its own.
PROCS: list[subprocess.Popen] = []


@atexit.register
def _stop_all() -> None:
    for p in PROCS:
        if p.poll() is None:
            p.kill()
            p.wait()


def free_port() -> int:
    """A port the kernel hands out now (redis-server and Sentinel read port 0 as
    "no TCP listener"); a process that takes it first fails the start check."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Node:
    """One server process on its own port and directory."""

    def __init__(self, store: str, binary: str, root: str, name: str, fsync: str, master: int | None):
        self.port = free_port()
        self.dir = os.path.join(root, name)
        os.makedirs(self.dir, exist_ok=True)
        self.log = open(os.path.join(root, name + ".log"), "w")  # noqa: SIM115 (closed by stop)
        if store == "sett":
            cmd = [binary, "--dir", os.path.join(self.dir, "db"), "--bind", "127.0.0.1", "--port", str(self.port)]
            cmd += ["--appendfsync", fsync, "--parent-pid", str(os.getpid())]
            if master is not None:
                cmd += ["--replicaof", f"127.0.0.1 {master}"]
        else:
            cmd = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--dir", self.dir]
            cmd += ["--appendonly", "yes", "--appendfsync", fsync, "--save", "", "--daemonize", "no"]
            if master is not None:
                cmd += ["--replicaof", "127.0.0.1", str(master)]
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)
        PROCS.append(self.proc)
        deadline = time.monotonic() + 10
        while True:
            try:
                if redis.Redis(port=self.port, socket_timeout=1).ping():
                    break
            except redis.RedisError:
                pass
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise SystemExit(f"{store} {name} did not start on {self.port}")
            time.sleep(0.05)
        self.client = redis.Redis(port=self.port, socket_timeout=10)

    def info(self) -> dict:
        try:
            return self.client.info("replication")
        except redis.RedisError:
            return {}

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def wait_for(what, seconds: float, why: str) -> None:
    deadline = time.monotonic() + seconds
    while not what():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out: {why}")
        time.sleep(0.05)


def group(store: str, binary: str, root: str, fsync: str, replicas: int) -> list[Node]:
    master = Node(store, binary, root, "master", fsync, None)
    nodes = [master] + [Node(store, binary, root, f"replica{i}", fsync, master.port) for i in range(replicas)]
    wait_for(
        lambda: (
            master.info().get("connected_slaves", 0) == replicas
            and all(n.info().get("master_link_status") == "up" for n in nodes[1:])
        ),
        30,
        f"{store}: {replicas} replicas did not connect",
    )
    return nodes


def probe(master: Node, replica: Node, stop: threading.Event, lags: list) -> None:
    """Every 20 ms: SET a new key on the master, then poll the replica until it has it."""
    m = redis.Redis(port=master.port, socket_timeout=10)
    r = redis.Redis(port=replica.port, socket_timeout=10)
    i = 0
    while not stop.is_set():
        key = f"lagprobe:{i}"
        m.set(key, "1")
        t0 = time.perf_counter()
        while r.get(key) is None:
            if time.perf_counter() - t0 > 30:
                raise SystemExit(f"{key} never reached the replica")
            time.sleep(0.0002)
        lags.append((time.perf_counter() - t0) * 1000)
        i += 1
        time.sleep(0.02)


def load(store: str, binary: str, fsync: str, replicas: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="sett-repl-") as root:
        nodes = group(store, binary, root, fsync, replicas)
        stop, lags = threading.Event(), []
        t = threading.Thread(target=probe, args=(nodes[0], nodes[1], stop, lags)) if replicas else None
        if t:
            t.start()
        out = subprocess.run(
            ["redis-benchmark", "-h", "127.0.0.1", "-p", str(nodes[0].port), "-c", str(CLIENTS), "-n", str(N[fsync])]
            + ["-d", str(VALUE), "-r", "100000", "-t", "set", "--csv"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        stop.set()
        if t:
            t.join()
        row = next(csv.DictReader(io.StringIO(out)))
        for n in nodes:
            n.stop()
    lags.sort()

    def pick(q: float) -> float:
        return lags[min(len(lags) - 1, int(q * len(lags)))] if lags else float("nan")

    # redis-benchmark 7 names its columns p99_latency_ms and so on.
    p99 = next(float(v) for k, v in row.items() if k.startswith("p99"))
    return {"rps": float(row["rps"]), "p99_ms": p99, "lag50": pick(0.5), "lag99": pick(0.99)}


def failover(store: str, binary: str) -> float:
    """Seconds from kill -9 of the master to a replica the sentinels name that answers ROLE master."""
    with tempfile.TemporaryDirectory(prefix="sett-sentinel-") as root:
        nodes = group(store, binary, root, "everysec", 2)
        sentinels, procs = [], []
        for i in range(3):
            port = free_port()
            conf = os.path.join(root, f"sentinel{i}.conf")
            with open(conf, "w") as f:
                f.write(f"port {port}\nbind 127.0.0.1\ndir {root}\nlogfile {root}/sentinel{i}.log\n")
                f.write(f"sentinel monitor m 127.0.0.1 {nodes[0].port} 2\n")
                f.write("sentinel down-after-milliseconds m 1000\nsentinel failover-timeout m 4000\n")
            procs.append(subprocess.Popen(["redis-sentinel", conf], stdout=subprocess.DEVNULL))
            PROCS.append(procs[-1])
            sentinels.append(redis.Redis(port=port, socket_timeout=2))

        def ready() -> bool:
            try:
                return all(
                    s.sentinel_master("m")["num-slaves"] == 2 and s.sentinel_master("m")["num-other-sentinels"] == 2
                    for s in sentinels
                )
            except redis.RedisError:
                return False

        wait_for(ready, 30, f"{store}: the sentinels did not find the group")
        for i in range(300):
            nodes[0].client.set(f"k{i}", f"v{i}")
        if nodes[0].client.execute_command("WAIT", 1, 5000) < 1:
            raise SystemExit(f"{store}: WAIT 1 saw no replica")
        old = nodes[0].port
        nodes[0].stop(signal.SIGKILL)
        killed = time.monotonic()

        def promoted() -> bool:
            try:
                port = int(sentinels[0].sentinel_get_master_addr_by_name("m")[1])
                return port != old and redis.Redis(port=port, socket_timeout=1).execute_command("ROLE")[0] in (
                    b"master",
                    "master",
                )
            except (redis.RedisError, TypeError):
                return False

        wait_for(promoted, 60, f"{store}: no new master")
        took = time.monotonic() - killed
        new = int(sentinels[0].sentinel_get_master_addr_by_name("m")[1])
        r = redis.Redis(port=new, socket_timeout=5)
        missing = sum(r.get(f"k{i}") != f"v{i}".encode() for i in range(300))
        if missing:
            raise SystemExit(f"{store}: {missing} acknowledged keys missing on the new master")
        for p in procs:
            p.terminate()
            p.wait()
        for n in nodes:
            n.stop()
    return took


def span(v: list) -> str:
    return f"{statistics.median(v):,.1f} [{min(v):,.1f}–{max(v):,.1f}]"


def verdict(s: list, r: list, higher_better: bool) -> str:
    ratio = statistics.median(s) / statistics.median(r)
    if not higher_better:
        ratio = 1 / ratio
    if min(s) <= max(r) and min(r) <= max(s):
        return f"{ratio:.2f}x tie"
    return f"{ratio:.2f}x {'ahead' if ratio > 1 else 'behind'}"


def main() -> None:
    binary, out = sys.argv[1], sys.argv[2]
    started = time.time()
    rows = []
    for fsync in ("everysec", "always"):
        for replicas in (0, 1, 2):
            for run in range(RUNS):
                order = ("sett", "redis") if run % 2 == 0 else ("redis", "sett")
                for store in order:
                    res = load(store, binary, fsync, replicas)
                    rows.append({"store": store, "fsync": fsync, "replicas": replicas, "run": run + 1, **res})
                    print(f"{store} {fsync} {replicas} replicas run {run + 1}: {res}", file=sys.stderr)
    fails = []
    for run in range(RUNS):
        for store in ("sett", "redis") if run % 2 == 0 else ("redis", "sett"):
            took = failover(store, binary)
            fails.append({"store": store, "run": run + 1, "seconds": took})
            print(f"{store} failover run {run + 1}: {took:.2f} s", file=sys.stderr)
    git = ["git", "rev-parse", "--short=12", "HEAD"]
    commit = subprocess.run(git, capture_output=True, text=True, check=True).stdout.strip()
    redis_version = subprocess.run(["redis-server", "--version"], capture_output=True, text=True, check=True)
    redis_version = redis_version.stdout.split()[2]

    def cell(store: str, fsync: str, n: int, field: str) -> list:
        return [r[field] for r in rows if (r["store"], r["fsync"], r["replicas"]) == (store, fsync, n)]

    def lag(store: str, fsync: str, n: int) -> str:
        if not n:
            return "–"
        p50, p99 = statistics.median(cell(store, fsync, n, "lag50")), statistics.median(cell(store, fsync, n, "lag99"))
        return f"{p50:.2f} / {p99:.2f}"

    lines = [
        "# Replication: sett-server against redis-server",
        "",
        (
            f"Written by `server/bench/replication.py` (`make bench-replication`) on {time.strftime('%Y-%m-%d %H:%M', time.gmtime(started))} UTC "
            f"at commit {commit}, {time.time() - started:.0f} s. redis-server {redis_version.removeprefix('v=')} (Debian) with "
            "`--appendonly yes --appendfsync MODE --save ''` on every node; sett-server (release build) with "
            "`--appendfsync MODE` on every node. A master and its replicas on one 2-core machine, on loopback."
        ),
        "",
        (
            f"Load: redis-benchmark SET, {CLIENTS} clients, {VALUE} B values, random keys out of 100000, "
            f"{N['everysec']} requests at everysec and {N['always']} at always. Lag: beside the load a probe SETs a new "
            "key on the master every 20 ms and polls the first replica (every 0.2 ms) until it serves the key; the "
            "time from the master's reply to the replica's. Failover: 3 redis-sentinel (quorum 2, down-after 1 s), "
            "300 keys acknowledged by WAIT 1, kill -9 of the master, seconds until the sentinels name a replica "
            "that answers ROLE as master (and every key is on it)."
        ),
        "",
        (
            f"{RUNS} runs per cell, the two stores alternating which goes first; medians [min–max]. Where the "
            "ranges overlap the result is a tie."
        ),
        "",
        "## Master throughput and replication lag",
        "",
        "| fsync | replicas | redis-server SET/s | sett-server SET/s | sett vs redis | redis lag p50 / p99 ms | sett lag p50 / p99 ms |",
        "|---|---:|---:|---:|---|---:|---:|",
    ]
    for fsync in ("everysec", "always"):
        for n in (0, 1, 2):
            rr, sr = cell("redis", fsync, n, "rps"), cell("sett", fsync, n, "rps")
            lines.append(
                f"| {fsync} | {n} | {span(rr)} | {span(sr)} | {verdict(sr, rr, True)} "
                f"| {lag('redis', fsync, n)} | {lag('sett', fsync, n)} |"
            )
    fr = [f["seconds"] for f in fails if f["store"] == "redis"]
    fs = [f["seconds"] for f in fails if f["store"] == "sett"]
    lines += [
        "",
        "## Failover by Sentinel",
        "",
        "| | redis-server | sett-server | sett vs redis |",
        "|---|---:|---:|---|",
        f"| seconds from kill -9 to a new master | {span(fr)} | {span(fs)} | {verdict(fs, fr, False)} |",
        "",
        "## Every run",
        "",
        "```",
        "store,fsync,replicas,run,rps,p99_ms,lag50_ms,lag99_ms",
    ]
    lines += [
        f"{r['store']},{r['fsync']},{r['replicas']},{r['run']},{r['rps']:.0f},{r['p99_ms']:.3f},{r['lag50']:.3f},{r['lag99']:.3f}"
        for r in rows
    ]
    lines += [f"failover,{f['store']},{f['run']},{f['seconds']:.2f}" for f in fails]
    lines += ["```", ""]
    with open(out, "w") as f:
        f.write("\n".join(lines))
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
