// Command populate fills one engine with the badger-bench data set: keys
// vsz=%05d-k=%010d with k drawn uniformly at random (with replacement) from
// [0, keys_mil·10⁶) by a fixed sequence, so that every engine is given the same
// keys whichever writer takes which batch; values of valsz bytes that are a
// function of k (random looking and incompressible, see internal/keys), written
// by 32 goroutines in 1000-entry batches. The clock runs from the first write
// until the engine is closed with its memtables flushed and its logs synced. It
// prints progress every second and, at the end, the time, keys written, disk
// size after close and the engine's peak RSS (the process's peak less the
// harness's own buffers, which are made and touched before the engine is
// opened), then one RESULT line in JSON for the runner.
package main

import (
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"settbench/internal/keys"
	"settbench/internal/rss"
	"settbench/stores"
)

// Result is what the runner reads from the RESULT line.
type Result struct {
	Engine         string    `json:"engine"`
	ValSize        int       `json:"valsz"`
	Keys           int64     `json:"keys"`
	Seconds        float64   `json:"seconds"`
	KeysPerSec     float64   `json:"keys_per_sec"`
	DiskApparent   int64     `json:"disk_apparent"`
	DiskAllocated  int64     `json:"disk_allocated"`
	PeakRSS        int64     `json:"peak_rss"` // the engine's: process peak less the baseline
	RSS            rss.Phase `json:"rss"`
	RawBytes       int64     `json:"raw_bytes"`
	Sync           bool      `json:"sync"`
	ValueThreshold int       `json:"value_threshold"`
	Compression    string    `json:"compression"`
}

func main() {
	kv := flag.String("kv", "sett", "engine: sett, sett-enc, rocksdb, rocksdb-blob, badger or pebble")
	valsz := flag.Int("valsz", 128, "value size in bytes")
	keysMil := flag.Float64("keys_mil", 1, "keys to write, in millions")
	dir := flag.String("dir", "/tmp/badger-bench", "base directory; the data goes to DIR/<kv>-vsz<valsz>")
	syncW := flag.Bool("sync", false, "make every batch durable before the next (same for every engine)")
	writers := flag.Int("writers", 32, "concurrent writers")
	batch := flag.Int("batch", 1000, "entries per batch")
	cacheMiB := flag.Int64("cache_mib", stores.DefaultCacheBytes>>20, "memory budget for the engine's own caches, MiB")
	threshold := flag.Int("sett_value_threshold", 0, "sett only: values of at least this many bytes go to its value log (0: the suite's, stores.ValueThreshold)")
	compression := flag.String("compression", "none", "codec of table data blocks for sett and RocksDB on every level: none, lz4 or zstd (Badger ignores it; the suite's values are random, so this measures what a codec costs on data it cannot shrink)")
	settOptions := flag.String("sett_options", "", "sett and sett-enc only: a JSON object of sett.Options fields (Go names) laid over the suite's settings, e.g. '{\"NumLevelZeroTables\":48}'")
	flag.Parse()
	if err := stores.CheckCompression(*compression); err != nil {
		fail(err)
	}
	if *valsz <= 0 || *writers <= 0 || *batch <= 0 || *keysMil <= 0 {
		fail(fmt.Errorf("--valsz, --writers, --batch and --keys_mil must be positive"))
	}

	path := keys.Dir(*dir, *kv, *valsz)
	if err := os.RemoveAll(path); err != nil {
		fail(err)
	}
	total := keys.Count(*keysMil)
	batches := (total + int64(*batch) - 1) / int64(*batch)

	// Every writer's buffers are made and touched before the baseline.
	type bufs struct{ ks, vs [][]byte }
	wbufs := make([]bufs, *writers)
	for w := range wbufs {
		wbufs[w].ks = make([][]byte, *batch)
		wbufs[w].vs = make([][]byte, *batch)
		for i := range wbufs[w].vs {
			wbufs[w].ks[i] = make([]byte, 0, 32)
			wbufs[w].vs[i] = make([]byte, *valsz)
			keys.FillValue(wbufs[w].vs[i], *valsz, int64(i))
		}
	}
	sampler := rss.Start(100 * time.Millisecond)

	st, err := stores.Open(*kv, path, stores.Options{Sync: *syncW, CacheBytes: *cacheMiB << 20, Compression: *compression, ValueThreshold: *threshold, SettOptions: *settOptions})
	if err != nil {
		fail(err)
	}
	var next, written atomic.Int64
	start := time.Now()
	done := make(chan struct{})
	go progress(&written, start, sampler, done)

	var wg sync.WaitGroup
	errs := make(chan error, *writers)
	for w := 0; w < *writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			ks, vs := wbufs[w].ks, wbufs[w].vs
			for {
				b := next.Add(1) - 1
				if b >= batches {
					return
				}
				for i := range ks {
					k := keys.WriteIndex(uint64(b)*uint64(len(ks))+uint64(i), total)
					ks[i] = keys.AppendKey(ks[i][:0], *valsz, k)
					keys.FillValue(vs[i], *valsz, k)
				}
				if err := st.WriteBatch(ks, vs); err != nil {
					errs <- err
					return
				}
				written.Add(int64(len(ks)))
			}
		}(w)
	}
	wg.Wait()
	select {
	case err := <-errs:
		fail(err)
	default:
	}
	// The engine's own account of its writes, where it keeps one: what the
	// device-bytes column breaks down into.
	if wa, ok := st.(stores.WriteAccounter); ok {
		if desc, err := wa.WriteAccount(); err == nil {
			fmt.Printf("WRITES at the end of the writes, before close: %s\n", desc)
		}
	}
	if err := st.Close(); err != nil {
		fail(err)
	}
	elapsed := time.Since(start).Seconds()
	close(done)
	phase := sampler.Stop()
	apparent, allocated, err := stores.DiskUsage(path)
	if err != nil {
		fail(err)
	}
	n := written.Load()
	r := Result{
		Engine: *kv, ValSize: *valsz, Keys: n, Seconds: elapsed, KeysPerSec: float64(n) / elapsed,
		DiskApparent: apparent, DiskAllocated: allocated, PeakRSS: phase.Engine(), RSS: phase,
		RawBytes: n * int64(len(keys.Key(*valsz, 0))+*valsz), Sync: *syncW, ValueThreshold: cmp.Or(*threshold, stores.ValueThreshold),
		Compression: *compression,
	}
	fmt.Printf("%s valsz=%d: %d keys in %.2fs (%.0f keys/s, clock stopped after close: memtables flushed, logs synced); disk after close %.1f MiB apparent, %.1f MiB allocated; engine peak RSS %.0f MiB (process peak %.0f less harness baseline %.0f)\n",
		r.Engine, r.ValSize, r.Keys, r.Seconds, r.KeysPerSec, mib(apparent), mib(allocated), mib(r.PeakRSS), mib(max(phase.PeakHWM, phase.PeakRSS)), mib(phase.Baseline))
	line, _ := json.Marshal(r)
	fmt.Printf("RESULT %s\n", line)
}

func progress(written *atomic.Int64, start time.Time, s *rss.Sampler, done chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var last int64
	for {
		select {
		case <-done:
			return
		case <-t.C:
			n := written.Load()
			cur := rss.Read()
			fmt.Printf("[%5.0fs] written %10d  %9.0f keys/s  RSS %.0f MiB (engine %.0f)  MemAvailable %.0f MiB\n", time.Since(start).Seconds(), n, float64(n-last),
				mib(cur.RSS), mib(cur.RSS-s.Current().Baseline), mib(rss.MemAvailable()))
			last = n
		}
	}
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func fail(err error) {
	fmt.Fprintln(os.Stderr, "populate:", err)
	os.Exit(1)
}
