// Command kvbench measures one store the way KVBench does: batch-write cost,
// memory, disk, prefix scans, set, get, mixed set/get and delete throughput.
// Run each store in its own process (cmd/kvrun does) so that MemUsage — the
// peak RSS of the process — belongs to that store alone.
package main

import (
	"encoding/csv"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"settbench/internal/rss"
	"settbench/stores"
)

// PrefixKeys is how many keys every prefix call returns, from every store.
const PrefixKeys = 10

func key(i int64) []byte { return fmt.Appendf(nil, "kvbench-%012d", i) }

// Row is one line of results.
type Row struct {
	Store                   string
	Fsync                   bool
	BatchWriteSec           float64
	MemBytes, DiskApparent  int64
	DiskAllocated           int64
	Prefix, Set, Get        float64
	SetMixed, GetMixed, Del float64
	GetHit, GetMixedHit     float64
}

func main() {
	store := flag.String("s", "sett", "store: "+strings.Join(stores.KVKinds, ", "))
	conc := flag.Int("c", 4, "concurrency (goroutines per case)")
	dur := flag.Duration("d", 2*time.Second, "duration of each timed case")
	size := flag.Int("size", 256, "value size in bytes, for every case")
	n := flag.Int64("set", 100000, "entries written by the batch-write case (and the key space of the others)")
	fsync := flag.Bool("fsync", false, "make every write durable before it returns")
	aof := flag.Bool("aof", false, "give the map and btree baselines an append-only file")
	cacheMiB := flag.Int64("cache-mib", stores.DefaultCacheBytes>>20, "memory budget, in MiB, that every store gets for its own cache")
	dirFlag := flag.String("dir", "", "data directory (default: a new temporary directory, removed at the end)")
	save := flag.String("save", "", "append the row to this CSV file")
	runNo := flag.Int("run", 1, "the run this row belongs to, written to the CSV (cmd/kvrun repeats every store)")
	flag.Parse()
	if *cacheMiB < 1 {
		must(fmt.Errorf("-cache-mib %d: the budget is at least 1 MiB", *cacheMiB))
	}
	dir := *dirFlag
	if dir == "" {
		d, err := os.MkdirTemp("", "kvbench-")
		must(err)
		dir = d
		defer os.RemoveAll(d)
	}
	o := stores.KVOptions{Fsync: *fsync, AOF: *aof, CacheBytes: *cacheMiB << 20}
	r, err := run(*store, dir, *conc, *dur, *size, *n, o)
	must(err)
	fmt.Printf("%-9s fsync=%-5v BatchWrite %.3fs  Mem %.0f MiB  Disk %.1f/%.1f MiB  Prefix %.0f  Set %.0f  Get %.0f (hit %.0f%%)  Setmixed %.0f  Getmixed %.0f (hit %.0f%%)  Del %.0f  [op/s]\n",
		r.Store, r.Fsync, r.BatchWriteSec, float64(r.MemBytes)/(1<<20), float64(r.DiskApparent)/(1<<20), float64(r.DiskAllocated)/(1<<20),
		r.Prefix, r.Set, r.Get, r.GetHit*100, r.SetMixed, r.GetMixed, r.GetMixedHit*100, r.Del)
	if *save != "" {
		must(appendCSV(*save, r, *runNo))
	}
}

func run(kind, dir string, conc int, dur time.Duration, size int, n int64, o stores.KVOptions) (Row, error) {
	r := Row{Store: kind, Fsync: o.Fsync}
	kv, err := stores.OpenKV(kind, dir, o)
	if err != nil {
		return r, err
	}
	val := make([]byte, size)
	for i := range val {
		val[i] = byte(rand.Uint32())
	}

	// BatchWrite: n entries in 1000-entry batches.
	start := time.Now()
	for i := int64(0); i < n; i += 1000 {
		var ks, vs [][]byte
		for j := i; j < min(i+1000, n); j++ {
			ks, vs = append(ks, key(j)), append(vs, val)
		}
		if err := kv.BatchSet(ks, vs); err != nil {
			return r, err
		}
	}
	if err := kv.Flush(); err != nil {
		return r, err
	}
	r.BatchWriteSec = time.Since(start).Seconds()
	// DiskUsage: the footprint of the n entries, measured after close (the later
	// cases overwrite and delete, which would measure each engine's garbage instead).
	if stores.Persistent(kind) || o.AOF {
		if err := kv.Close(); err != nil {
			return r, err
		}
		if r.DiskApparent, r.DiskAllocated, err = stores.DiskUsage(dir); err != nil {
			return r, err
		}
		if kv, err = stores.OpenKV(kind, dir, o); err != nil {
			return r, err
		}
	}

	// Prefix: every call names 10 keys (kvbench-%011d covers ten).
	var bad atomic.Int64
	r.Prefix, err = timed(conc, dur, func(rng *rand.Rand) error {
		p := fmt.Appendf(nil, "kvbench-%011d", rng.Int64N(n/PrefixKeys))
		got, err := kv.Prefix(p, PrefixKeys, func(_, _ []byte) bool { return true })
		if got != PrefixKeys {
			bad.Add(1)
		}
		return err
	})
	if err != nil {
		return r, err
	}
	if bad.Load() > 0 {
		return r, fmt.Errorf("%d prefix calls did not return %d keys", bad.Load(), PrefixKeys)
	}

	r.Set, err = timed(conc, dur, func(rng *rand.Rand) error { return kv.Set(key(rng.Int64N(n)), val) })
	if err != nil {
		return r, err
	}
	var hits, gets atomic.Int64
	get := func(rng *rand.Rand) error {
		_, ok, err := kv.Get(key(rng.Int64N(n)))
		gets.Add(1)
		if ok {
			hits.Add(1)
		}
		return err
	}
	if r.Get, err = timed(conc, dur, get); err != nil {
		return r, err
	}
	r.GetHit = float64(hits.Load()) / float64(max(gets.Load(), 1))

	// Mixed: one writer and conc-1 readers (at least one) at the same time.
	hits.Store(0)
	gets.Store(0)
	var wg sync.WaitGroup
	var werr, rerr error
	wg.Add(2)
	go func() {
		defer wg.Done()
		r.SetMixed, werr = timed(1, dur, func(rng *rand.Rand) error { return kv.Set(key(rng.Int64N(n)), val) })
	}()
	go func() {
		defer wg.Done()
		r.GetMixed, rerr = timed(max(conc-1, 1), dur, get)
	}()
	wg.Wait()
	if werr != nil || rerr != nil {
		return r, fmt.Errorf("mixed: %v %v", werr, rerr)
	}
	r.GetMixedHit = float64(hits.Load()) / float64(max(gets.Load(), 1))

	// Del: distinct existing keys until the time is up or the keys run out.
	var next atomic.Int64
	r.Del, err = timed(conc, dur, func(*rand.Rand) error {
		i := next.Add(1) - 1
		if i >= n {
			return errDone
		}
		return kv.Delete(key(i))
	})
	if err != nil {
		return r, err
	}
	if err := kv.Close(); err != nil {
		return r, err
	}
	r.MemBytes = rss.Read().HWM
	return r, nil
}

var errDone = fmt.Errorf("done")

// timed runs op from conc goroutines for dur and returns ops per second.
func timed(conc int, dur time.Duration, op func(*rand.Rand) error) (float64, error) {
	var ops atomic.Int64
	var first atomic.Value
	deadline := time.Now().Add(dur)
	start := time.Now()
	var wg sync.WaitGroup
	for g := 0; g < conc; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g)+1, uint64(time.Now().UnixNano())))
			for i := 0; ; i++ {
				if i%64 == 0 && time.Now().After(deadline) {
					return
				}
				if err := op(rng); err != nil {
					if err != errDone {
						first.CompareAndSwap(nil, err)
					}
					return
				}
				ops.Add(1)
			}
		}(g)
	}
	wg.Wait()
	if e, ok := first.Load().(error); ok {
		return 0, e
	}
	return float64(ops.Load()) / time.Since(start).Seconds(), nil
}

// Header of the CSV (and of cmd/kvrun's tables).
var Header = []string{"store", "fsync", "batchwrite_s", "mem_bytes", "disk_apparent", "disk_allocated",
	"prefix_ops", "set_ops", "get_ops", "setmixed_ops", "getmixed_ops", "del_ops", "get_hit", "getmixed_hit", "run"}

func appendCSV(path string, r Row, run int) error {
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	w := csv.NewWriter(f)
	if os.IsNotExist(statErr) {
		_ = w.Write(Header)
	}
	ff := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	_ = w.Write([]string{r.Store, strconv.FormatBool(r.Fsync), ff(r.BatchWriteSec), strconv.FormatInt(r.MemBytes, 10),
		strconv.FormatInt(r.DiskApparent, 10), strconv.FormatInt(r.DiskAllocated, 10), ff(r.Prefix), ff(r.Set), ff(r.Get),
		ff(r.SetMixed), ff(r.GetMixed), ff(r.Del), ff(r.GetHit), ff(r.GetMixedHit), strconv.Itoa(run)})
	w.Flush()
	return w.Error()
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "kvbench:", err)
		os.Exit(1)
	}
}
