// The badger-bench benchmarks over data sets written by cmd/populate:
//
//	go test -bench 'ReadRandom|Iterate' --keys_mil 1 --valsz 128 --dir /tmp/badger-bench
//
// ReadRandom: parallel readers, each op a random key of the populate format
// (about 63% exist), value copied out. Iterate*: a forward scan from the first
// key, key (and value) copied; one op is one item, so ns/op is per item, and a
// scan restarts after 2,000,000 items or the end.
package bench

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"settbench/internal/keys"
	"settbench/stores"
)

var (
	flagKeysMil = flag.Float64("keys_mil", 1, "keys written by populate, in millions")
	flagValSize = flag.Int("valsz", 128, "value size of the data set")
	flagDir     = flag.String("dir", "/tmp/badger-bench", "base directory given to populate")
)

var (
	openMu sync.Mutex
	open   = map[string]stores.Store{}
)

// store opens (once per process) the data set of engine kind.
func store(b *testing.B, kind string) stores.Store {
	openMu.Lock()
	defer openMu.Unlock()
	if s, ok := open[kind]; ok {
		return s
	}
	path := keys.Dir(*flagDir, kind, *flagValSize)
	if _, err := os.Stat(path); err != nil {
		b.Skipf("no %s data set at %s (run cmd/populate first): %v", kind, path, err)
	}
	s, err := stores.Open(kind, path, stores.Options{})
	if err != nil {
		b.Fatalf("opening %s: %v", kind, err)
	}
	open[kind] = s
	return s
}

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	for _, s := range open {
		_ = s.Close()
	}
	os.Exit(code)
}

func benchReadRandom(b *testing.B, kind string) {
	s := store(b, kind)
	total := keys.Count(*flagKeysMil)
	var found, notFound, failed atomic.Int64
	var seed atomic.Uint64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		rng := rand.New(rand.NewPCG(seed.Add(1), 0xbeef))
		key := make([]byte, 0, 32)
		dst := make([]byte, 0, *flagValSize)
		var f, nf, e int64
		for pb.Next() {
			key = keys.AppendKey(key[:0], *flagValSize, rng.Int64N(total))
			v, err := s.Get(key, dst)
			switch {
			case err == nil:
				f++
				dst = v[:0]
			case errors.Is(err, stores.ErrNotFound):
				nf++
			default:
				e++
			}
		}
		found.Add(f)
		notFound.Add(nf)
		failed.Add(e)
	})
	b.StopTimer()
	b.Logf("%s: found %d, not found %d, errors %d", kind, found.Load(), notFound.Load(), failed.Load())
	if failed.Load() > 0 {
		b.Fatalf("%d reads failed", failed.Load())
	}
}

func benchIterate(b *testing.B, kind string, keysOnly bool) {
	s := store(b, kind)
	var kbuf, vbuf []byte
	b.ResetTimer()
	n := 0
	for n < b.N {
		got, err := s.Iterate(keysOnly, min(b.N-n, 2_000_000), func(k, v []byte) bool {
			kbuf = append(kbuf[:0], k...)
			vbuf = append(vbuf[:0], v...)
			return true
		})
		if err != nil {
			b.Fatal(err)
		}
		if got == 0 {
			b.Fatalf("%s holds no keys", kind)
		}
		n += got
	}
	b.StopTimer()
	if !keysOnly && len(vbuf) != *flagValSize {
		b.Fatalf("%s: last value has %d bytes, want %d", kind, len(vbuf), *flagValSize)
	}
}

func BenchmarkReadRandomSett(b *testing.B)   { benchReadRandom(b, "sett") }
func BenchmarkReadRandomRocks(b *testing.B)  { benchReadRandom(b, "rocksdb") }
func BenchmarkReadRandomBadger(b *testing.B) { benchReadRandom(b, "badger") }

func BenchmarkReadRandomRocksBlob(b *testing.B) { benchReadRandom(b, "rocksdb-blob") }

func BenchmarkIterateRocksBlobOnlyKeys(b *testing.B)   { benchIterate(b, "rocksdb-blob", true) }
func BenchmarkIterateRocksBlobWithValues(b *testing.B) { benchIterate(b, "rocksdb-blob", false) }

func BenchmarkIterateSettOnlyKeys(b *testing.B)     { benchIterate(b, "sett", true) }
func BenchmarkIterateRocksOnlyKeys(b *testing.B)    { benchIterate(b, "rocksdb", true) }
func BenchmarkIterateBadgerOnlyKeys(b *testing.B)   { benchIterate(b, "badger", true) }
func BenchmarkIterateSettWithValues(b *testing.B)   { benchIterate(b, "sett", false) }
func BenchmarkIterateRocksWithValues(b *testing.B)  { benchIterate(b, "rocksdb", false) }
func BenchmarkIterateBadgerWithValues(b *testing.B) { benchIterate(b, "badger", false) }

// TestKeyFormatMatchesBadgerBench keeps the key layout that makes the data sets comparable.
func TestKeyFormatMatchesBadgerBench(t *testing.T) {
	if got := string(keys.Key(128, 42)); got != "vsz=00128-k=0000000042" {
		t.Fatalf("key format changed: %s", got)
	}
	if got := string(keys.AppendKey(nil, 16, 7)); got != fmt.Sprintf("vsz=%05d-k=%010d", 16, 7) {
		t.Fatal(got)
	}
}
