// Command kvserver is a Redis-protocol server backed by any KVBench store (see
// package kvserver), for redis-benchmark. It listens on loopback only unless
// -allow-remote is given.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"settbench/kvserver"
	"settbench/stores"
)

func main() {
	store := flag.String("s", "sett", "store: "+strings.Join(stores.KVKinds, ", "))
	addr := flag.String("addr", "127.0.0.1:6380", "listen address")
	allowRemote := flag.Bool("allow-remote", false, "allow a non-loopback listen address")
	dir := flag.String("dir", "", "data directory (default: a new temporary directory, removed at exit)")
	fsync := flag.Bool("fsync", false, "make every write durable before replying")
	pass := flag.String("requirepass", "", "password clients must AUTH with")
	maxBulk := flag.Int("max-bulk", 8<<20, "largest bulk string accepted, in bytes")
	cacheMiB := flag.Int64("cache-mib", stores.DefaultCacheBytes>>20, "memory budget, in MiB, for the store's own cache")
	flag.Parse()
	host, _, err := net.SplitHostPort(*addr)
	if err != nil {
		log.Fatal(err)
	}
	if ip := net.ParseIP(host); !*allowRemote && (ip == nil || !ip.IsLoopback()) && host != "localhost" {
		log.Fatalf("refusing to listen on %s: not a loopback address (pass -allow-remote to insist)", *addr)
	}
	d := *dir
	if d == "" {
		if d, err = os.MkdirTemp("", "kvserver-"); err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(d)
	}
	if *cacheMiB < 1 {
		log.Fatalf("-cache-mib %d: the budget is at least 1 MiB", *cacheMiB)
	}
	kv, err := stores.OpenKV(*store, d, stores.KVOptions{Fsync: *fsync, CacheBytes: *cacheMiB << 20})
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("kvserver: %s on %s (data in %s)\n", *store, ln.Addr(), d)
	s := kvserver.New(kv, *pass, *maxBulk)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-stop
		ln.Close()
	}()
	s.Serve(ln)
	if err := kv.Close(); err != nil {
		log.Fatal(err)
	}
}
