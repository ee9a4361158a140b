// Command populate fills one engine with the badger-bench data set: keys
// vsz=%05d-k=%010d with k drawn uniformly at random (with replacement) from
// [0, keys_mil·10⁶), random values of valsz bytes, written by 32 goroutines in
// 1000-entry batches. It prints progress every second and, at the end, the
// time, keys written, disk size after close and peak RSS, then one RESULT line
// in JSON for the runner.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"settbench/internal/keys"
	"settbench/stores"
)

// Result is what the runner reads from the RESULT line.
type Result struct {
	Engine         string  `json:"engine"`
	ValSize        int     `json:"valsz"`
	Keys           int64   `json:"keys"`
	Seconds        float64 `json:"seconds"`
	KeysPerSec     float64 `json:"keys_per_sec"`
	DiskApparent   int64   `json:"disk_apparent"`
	DiskAllocated  int64   `json:"disk_allocated"`
	PeakRSS        int64   `json:"peak_rss"`
	RawBytes       int64   `json:"raw_bytes"`
	Sync           bool    `json:"sync"`
	ValueThreshold int     `json:"value_threshold"`
}

func main() {
	kv := flag.String("kv", "sett", "engine: sett, rocksdb, rocksdb-blob or badger")
	valsz := flag.Int("valsz", 128, "value size in bytes")
	keysMil := flag.Float64("keys_mil", 1, "keys to write, in millions")
	dir := flag.String("dir", "/tmp/badger-bench", "base directory; the data goes to DIR/<kv>-vsz<valsz>")
	syncW := flag.Bool("sync", false, "make every batch durable before the next (same for every engine)")
	writers := flag.Int("writers", 32, "concurrent writers")
	batch := flag.Int("batch", 1000, "entries per batch")
	flag.Parse()

	path := keys.Dir(*dir, *kv, *valsz)
	if err := os.RemoveAll(path); err != nil {
		fail(err)
	}
	st, err := stores.Open(*kv, path, stores.Options{Sync: *syncW})
	if err != nil {
		fail(err)
	}
	total := keys.Count(*keysMil)
	batches := (total + int64(*batch) - 1) / int64(*batch)
	var next, written atomic.Int64
	start := time.Now()
	done := make(chan struct{})
	go progress(&written, start, done)

	var wg sync.WaitGroup
	errs := make(chan error, *writers)
	for w := 0; w < *writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w)+1, 0x5eed))
			ks := make([][]byte, *batch)
			vs := make([][]byte, *batch)
			for i := range vs {
				vs[i] = make([]byte, *valsz)
			}
			for next.Add(1) <= batches {
				for i := range ks {
					ks[i] = keys.AppendKey(ks[i][:0], *valsz, rng.Int64N(total))
					fillRandom(rng, vs[i])
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
	close(done)
	select {
	case err := <-errs:
		fail(err)
	default:
	}
	if err := st.Close(); err != nil {
		fail(err)
	}
	elapsed := time.Since(start).Seconds()
	apparent, allocated, err := stores.DiskUsage(path)
	if err != nil {
		fail(err)
	}
	_, peak := stores.RSS()
	n := written.Load()
	r := Result{
		Engine: *kv, ValSize: *valsz, Keys: n, Seconds: elapsed, KeysPerSec: float64(n) / elapsed,
		DiskApparent: apparent, DiskAllocated: allocated, PeakRSS: peak,
		RawBytes: n * int64(len(keys.Key(*valsz, 0))+*valsz), Sync: *syncW, ValueThreshold: stores.ValueThreshold,
	}
	fmt.Printf("%s valsz=%d: %d keys in %.2fs (%.0f keys/s); disk after close %.1f MiB apparent, %.1f MiB allocated; peak RSS %.0f MiB\n",
		r.Engine, r.ValSize, r.Keys, r.Seconds, r.KeysPerSec, mib(apparent), mib(allocated), mib(peak))
	line, _ := json.Marshal(r)
	fmt.Printf("RESULT %s\n", line)
}

func fillRandom(rng *rand.Rand, b []byte) {
	for i := 0; i < len(b); i += 8 {
		x := rng.Uint64()
		for j := 0; j < 8 && i+j < len(b); j++ {
			b[i+j] = byte(x >> (8 * j))
		}
	}
}

func progress(written *atomic.Int64, start time.Time, done chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var last int64
	for {
		select {
		case <-done:
			return
		case <-t.C:
			n := written.Load()
			cur, _ := stores.RSS()
			fmt.Printf("[%5.0fs] written %10d  %9.0f keys/s  RSS %.0f MiB\n", time.Since(start).Seconds(), n, float64(n-last), mib(cur))
			last = n
		}
	}
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func fail(err error) {
	fmt.Fprintln(os.Stderr, "populate:", err)
	os.Exit(1)
}
