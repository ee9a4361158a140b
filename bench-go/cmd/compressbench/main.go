// Command compressbench compares sett and RocksDB on compressible data with
// the same codec: for each engine and codec (none, lz4, zstd on every level),
// it writes every key once with a JSON-like value that is a function of the
// key, closes (flushed, synced), measures the directory, reopens, waits for
// background work, then times random reads (every value checked) and a full
// scan with values (every value checked by hash against its key's, count
// checked). One markdown table
// on stdout.
//
//	compressbench -keys 200000 -valsz 1024 -dir /tmp/cb
package main

import (
	"bytes"
	"flag"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"settbench/internal/keys"
	"settbench/stores"
)

var (
	words  = []string{"checkout", "search", "login", "logout", "cart", "review", "wishlist", "profile", "orders", "settings", "help", "home", "product", "category", "payment", "shipping"}
	cities = []string{"Oslo", "Lyon", "Porto", "Graz", "Turku", "Ghent", "Basel", "Krakow"}
)

// jsonValue is a JSON-like record of exactly valsz bytes for key k (cut at
// valsz): as `sett-bench engine --values json`, names, words and dates repeat while
// ids, scores and durations vary.
func jsonValue(k int64, valsz int) []byte {
	r := rand.New(rand.NewPCG(uint64(k), 0x5eed))
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"id":%d,"user":"user%010d","email":"user%d@example.com","city":"%s","created":"2024-%02d-%02dT%02d:%02d:%02dZ","active":%t,"score":%d,"events":[`,
		k, k, k, cities[r.IntN(8)], 1+r.IntN(12), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), r.IntN(3) == 0, r.IntN(100000))
	for i := 0; b.Len() < valsz; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"type":"%s","page":"/%s/%d","ms":%d,"ok":%t}`,
			words[r.IntN(16)], words[r.IntN(16)], r.IntN(5000), r.IntN(2000), r.IntN(10) != 0)
	}
	return b.Bytes()[:valsz]
}

type row struct {
	engine, codec            string
	diskMiB                  float64
	populate, settle         time.Duration
	getNs, scanKeysPerSecond float64
}

// seed hashes values: a read value is checked against its key's by hash, so
// that generating the expected record stays out of the timed loops.
var seed = maphash.MakeSeed()

func run(kind, codec, dir string, n int64, valsz, reads, batch int, o stores.Options, want []uint64) (row, error) {
	r := row{engine: kind, codec: codec}
	o.Compression = codec
	// sett keeps values under its threshold in its tables, where the codec is.
	o.ValueThreshold = 2 * valsz
	if err := os.RemoveAll(dir); err != nil {
		return r, err
	}
	s, err := stores.Open(kind, dir, o)
	if err != nil {
		return r, err
	}
	start := time.Now()
	ks, vs := make([][]byte, 0, batch), make([][]byte, 0, batch)
	for j := int64(0); j < n; j++ {
		// Every key once, in a scattered order (n is coprime with the step).
		k := (j * 7919) % n
		ks = append(ks, keys.Key(valsz, k))
		vs = append(vs, jsonValue(k, valsz))
		if len(ks) == batch || j == n-1 {
			if err := s.WriteBatch(ks, vs); err != nil {
				return r, err
			}
			ks, vs = ks[:0], vs[:0]
		}
	}
	if err := s.Close(); err != nil {
		return r, err
	}
	r.populate = time.Since(start)
	// Reopen, let compactions finish, then measure the settled directory.
	if s, err = stores.Open(kind, dir, o); err != nil {
		return r, err
	}
	defer s.Close()
	waited, _, _, err := stores.WaitIdle(s, 2*time.Minute)
	if err != nil {
		return r, err
	}
	r.settle = waited
	apparent, _, err := stores.DiskUsage(dir)
	if err != nil {
		return r, err
	}
	r.diskMiB = float64(apparent) / (1 << 20)

	buf := make([]byte, 0, valsz)
	start = time.Now()
	for i := 0; i < reads; i++ {
		k := keys.ReadIndex(uint64(i), n)
		v, err := s.Get(keys.Key(valsz, k), buf)
		if err != nil {
			return r, fmt.Errorf("get %d: %w", k, err)
		}
		if maphash.Bytes(seed, v) != want[k] {
			return r, fmt.Errorf("key %d read back wrong", k)
		}
	}
	r.getNs = float64(time.Since(start).Nanoseconds()) / float64(reads)

	start = time.Now()
	var bad error
	seen, err := s.Iterate(false, int(n)+1, func(key, v []byte) bool {
		k, ok := keys.Index(key)
		if !ok || k < 0 || k >= n || maphash.Bytes(seed, v) != want[k] {
			bad = fmt.Errorf("scan: key %q read back wrong", key)
			return false
		}
		return true
	})
	if err == nil {
		err = bad
	}
	if err != nil {
		return r, err
	}
	if int64(seen) != n {
		return r, fmt.Errorf("scan saw %d keys of %d", seen, n)
	}
	r.scanKeysPerSecond = float64(seen) / time.Since(start).Seconds()
	return r, nil
}

func main() {
	engines := flag.String("engines", "sett,rocksdb", "engines, comma-separated (sett, rocksdb)")
	codecs := flag.String("codecs", "none,lz4,zstd", "codecs, comma-separated (none, lz4, zstd)")
	n := flag.Int64("keys", 200000, "keys, each written once")
	valsz := flag.Int("valsz", 1024, "value size in bytes")
	reads := flag.Int("reads", 200000, "random reads (one reader)")
	batch := flag.Int("batch", 1000, "entries per write batch")
	dir := flag.String("dir", "/tmp/compressbench", "base directory (one subdirectory per engine and codec, removed at the end)")
	cacheMiB := flag.Int64("cache_mib", stores.DefaultCacheBytes>>20, "RocksDB block cache, MiB (sett has no block cache)")
	flag.Parse()
	if *n%7919 == 0 {
		fmt.Fprintln(os.Stderr, "compressbench: -keys must not be a multiple of 7919")
		os.Exit(2)
	}
	o := stores.Options{CacheBytes: *cacheMiB << 20}
	want := make([]uint64, *n)
	for k := range want {
		want[k] = maphash.Bytes(seed, jsonValue(int64(k), *valsz))
	}
	fmt.Printf("%d keys x %d B JSON-like values, every key written once by one writer in %d-entry batches; %d random reads by one reader; one full scan with values; RocksDB block cache %d MiB; codec on every level, each engine's default level\n\n",
		*n, *valsz, *batch, *reads, *cacheMiB)
	fmt.Println("| engine | codec | disk after settle, MiB | populate incl. close, s | settle wait, s | random get, ns | scan with values, keys/s |")
	fmt.Println("|---|---|---:|---:|---:|---:|---:|")
	failed := false
	for _, codec := range strings.Split(*codecs, ",") {
		if err := stores.CheckCompression(codec); err != nil {
			fmt.Fprintln(os.Stderr, "compressbench:", err)
			os.Exit(2)
		}
		for _, kind := range strings.Split(*engines, ",") {
			sub := filepath.Join(*dir, kind+"-"+codec)
			r, err := run(kind, codec, sub, *n, *valsz, *reads, *batch, o, want)
			_ = os.RemoveAll(sub)
			if err != nil {
				fmt.Fprintf(os.Stderr, "compressbench: %s %s: %v\n", kind, codec, err)
				failed = true
				continue
			}
			fmt.Printf("| %s | %s | %.1f | %.2f | %.2f | %.0f | %.0f |\n", r.engine, r.codec, r.diskMiB,
				r.populate.Seconds(), r.settle.Seconds(), r.getNs, r.scanKeysPerSecond)
		}
	}
	if failed {
		os.Exit(1)
	}
}
