// The badger-bench benchmarks over data sets written by cmd/populate:
//
//	go test -bench 'ReadRandom|Iterate' --keys_mil 1 --valsz 128 --dir /tmp/badger-bench
//
// ReadRandom: parallel readers, each op a key of the populate format (about 63%
// exist) from one fixed sequence (internal/keys.ReadIndex), so that every engine
// reads the same keys and must find the same ones; each value found is copied
// out and checked against the value its key must hold. Iterate*: a forward scan
// from the first key, key (and value) copied out of the engine's borrowed slices
// and checked; one op is one item, and a scan restarts after 2,000,000 items or
// the end (a timed scan, --iter_seconds, does not stop at 2M items). MultiGet*:
// one caller alternates --mget_keys point reads with a MultiGet of as many
// keys, over the same fixed sequence, and reports both times per batch. Each engine is opened once per process and, before the clock, left
// to finish the flushes and compactions it has pending (the wait and the backlog
// are logged). With --read_seconds or --iter_seconds (and -benchtime 1x) a phase
// runs for that long instead of b.N operations. Each process prints its memory
// (PHASE_RSS) at the end; TestDigest (with --digest) prints a digest of the data.
package bench

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash/crc64"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"settbench/internal/keys"
	"settbench/internal/rss"
	"settbench/stores"
)

var (
	flagKeysMil     = flag.Float64("keys_mil", 1, "keys written by populate, in millions")
	flagValSize     = flag.Int("valsz", 128, "value size of the data set")
	flagDir         = flag.String("dir", "/tmp/badger-bench", "base directory given to populate")
	flagCacheMiB    = flag.Int64("cache_mib", stores.DefaultCacheBytes>>20, "memory budget for the engine's own caches, MiB")
	flagReaders     = flag.Int("readers", 0, "concurrent readers of ReadRandom (0: GOMAXPROCS)")
	flagReadSeconds = flag.Float64("read_seconds", 0, "run ReadRandom for this long (with -benchtime 1x) instead of b.N reads")
	flagIterSeconds = flag.Float64("iter_seconds", 0, "run Iterate for this long (with -benchtime 1x) instead of b.N items")
	flagCheckPrefix = flag.Uint64("check_prefix", 10000, "reads of the fixed sequence whose found count every engine must match")
	flagSettle      = flag.Duration("settle_timeout", 2*time.Minute, "longest wait for pending flushes and compactions before the clock (0: none, the reads start at once)")
	flagSettleAfter = flag.Duration("settle_after", 0, "after the benchmarks, wait this long at most for the engine to settle and print SETTLED with the time from open (0: no wait)")
	flagDigest      = flag.String("digest", "", "TestDigest: 'full' (keys and values) or 'keys'")
	flagMGetKeys    = flag.Int("mget_keys", 32, "keys per MultiGet batch")
	flagMGetSeconds = flag.Float64("mget_seconds", 0, "run MultiGet for this long (with -benchtime 1x) instead of b.N batch pairs")
	flagSettOptions = flag.String("sett_options", "", "sett and sett-enc only: a JSON object of sett.Options fields laid over the suite's settings (as populate's)")
)

var (
	openMu   sync.Mutex
	open     = map[string]stores.Store{}
	openedAt = map[string]time.Time{}
	watches  = map[string]*settleWatch{}
	sampler  *rss.Sampler
)

// fullCheckEvery: every value read is checked by its length and its first and
// last 8 bytes, and one in fullCheckEvery byte by byte, so that the check
// stays a small part of a read while a systematic error cannot hide.
const fullCheckEvery = 64

func checkValue(v []byte, k int64, i uint64) bool {
	if i%fullCheckEvery == 0 {
		return keys.FullCheckValue(v, *flagValSize, k)
	}
	return keys.QuickCheckValue(v, *flagValSize, k)
}

// store opens (once per process) the data set of engine kind and waits for its backlog.
func store(tb testing.TB, kind string) stores.Store {
	openMu.Lock()
	defer openMu.Unlock()
	if s, ok := open[kind]; ok {
		return s
	}
	path := keys.Dir(*flagDir, kind, *flagValSize)
	if _, err := os.Stat(path); err != nil {
		tb.Skipf("no %s data set at %s (run cmd/populate first): %v", kind, path, err)
	}
	if sampler == nil {
		sampler = rss.Start(100 * time.Millisecond)
	}
	opened := time.Now()
	s, err := stores.Open(kind, path, stores.Options{CacheBytes: *flagCacheMiB << 20, SettOptions: *flagSettOptions})
	if err != nil {
		tb.Fatalf("opening %s: %v", kind, err)
	}
	openedAt[kind] = opened
	if *flagSettleAfter > 0 {
		watches[kind] = watchSettle(s)
	}
	waited, idle, desc, err := stores.WaitIdle(s, *flagSettle)
	if err != nil {
		tb.Fatalf("%s backlog: %v", kind, err)
	}
	// The phase's peaks cover the measured work, not the engine's settling
	// (value-log GC, compactions), whose peak the SETTLE line reports.
	settled := sampler.Restart()
	line, _ := json.Marshal(map[string]any{"engine": kind, "version": stores.Version(kind), "waited_s": waited.Seconds(), "idle": idle, "backlog": desc,
		"settle_peak_rss": settled.Engine(), "settle_peak_anon": settled.EngineAnon()})
	fmt.Printf("SETTLE %s\n", line)
	open[kind] = s
	return s
}

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	for kind, s := range open {
		if *flagSettleAfter > 0 {
			settleAfter(kind, s)
		}
		_ = s.Close()
	}
	if sampler != nil {
		line, _ := json.Marshal(sampler.Stop())
		fmt.Printf("PHASE_RSS %s\n", line)
	}
	os.Exit(code)
}

// settleWatch follows an engine's backlog from its open on, beside the
// benchmarks, and records when the first run of idle reports that lasted
// stores.QuietPeriod began. An engine that settles while the reads still run
// is then timed at that moment, not at the end of the reads.
type settleWatch struct {
	stop chan struct{}
	done chan struct{}
	// Set before done closes.
	quietAt time.Time
	err     error
}

func watchSettle(s stores.Store) *settleWatch {
	w := &settleWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		var quietSince time.Time
		for {
			idle, _, err := s.Backlog()
			now := time.Now()
			switch {
			case err != nil:
				w.err = err
				return
			case !idle:
				quietSince = time.Time{}
			case quietSince.IsZero():
				quietSince = now
			case now.Sub(quietSince) >= stores.QuietPeriod:
				w.quietAt = quietSince
				return
			}
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

// wait waits at most timeout for the watch to see the engine settle; the
// zero time if it did not.
func (w *settleWatch) wait(timeout time.Duration) (time.Time, error) {
	select {
	case <-w.done:
	case <-time.After(timeout):
		close(w.stop)
		<-w.done
	}
	return w.quietAt, w.err
}

// settleAfter waits for the engine to settle after the benchmarks ran beside
// its background work, and prints SETTLED: the time from open until the
// start of the quiet run that confirmed it idle for good (watched from the
// open on, so the length of the benchmarks is no floor).
func settleAfter(kind string, s stores.Store) {
	start := time.Now()
	quietAt, err := watches[kind].wait(*flagSettleAfter)
	waited := time.Since(start)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s backlog: %v\n", kind, err)
		os.Exit(1)
	}
	_, desc, err := s.Backlog()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s backlog: %v\n", kind, err)
		os.Exit(1)
	}
	idle := !quietAt.IsZero()
	since := time.Since(openedAt[kind])
	if idle {
		since = quietAt.Sub(openedAt[kind])
	}
	line, _ := json.Marshal(map[string]any{"engine": kind, "since_open_s": since.Seconds(), "waited_s": waited.Seconds(), "idle": idle, "backlog": desc})
	fmt.Printf("SETTLED %s\n", line)
	if wa, ok := s.(stores.WriteAccounter); ok {
		if desc, err := wa.WriteAccount(); err == nil {
			fmt.Printf("WRITES since open, settled: %s\n", desc)
		}
	}
}

// readStats is what the readers of one ReadRandom run counted.
type readStats struct {
	reads, found, notFound, foundPrefix, bad atomic.Int64
}

func benchReadRandom(b *testing.B, kind string) {
	s := store(b, kind)
	total := keys.Count(*flagKeysMil)
	readers := *flagReaders
	if readers <= 0 {
		readers = runtime.GOMAXPROCS(0)
	}
	var deadline time.Time
	limit := uint64(b.N)
	if *flagReadSeconds > 0 {
		deadline = time.Now().Add(time.Duration(*flagReadSeconds * float64(time.Second)))
		limit = ^uint64(0)
	}
	const chunk = 64
	var next atomic.Uint64
	var st readStats
	var failed atomic.Value
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for r := 0; r < readers; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := make([]byte, 0, 32)
			dst := make([]byte, 0, *flagValSize)
			var n, f, nf, fp, bad int64
			defer func() {
				st.reads.Add(n)
				st.found.Add(f)
				st.notFound.Add(nf)
				st.foundPrefix.Add(fp)
				st.bad.Add(bad)
			}()
			for {
				first := next.Add(chunk) - chunk
				// The fixed prefix is always read to its end, past the deadline
				// if need be: every engine's found count over it is compared.
				if first >= limit || (!deadline.IsZero() && first >= *flagCheckPrefix && time.Now().After(deadline)) {
					return
				}
				for i := first; i < first+chunk && i < limit; i++ {
					k := keys.ReadIndex(i, total)
					key = keys.AppendKey(key[:0], *flagValSize, k)
					v, err := s.Get(key, dst)
					n++
					switch {
					case err == nil:
						f++
						if i < *flagCheckPrefix {
							fp++
						}
						if !checkValue(v, k, i) {
							bad++
						}
						dst = v[:0]
					case errors.Is(err, stores.ErrNotFound):
						nf++
					default:
						failed.Store(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	b.StopTimer()
	if err, ok := failed.Load().(error); ok {
		b.Fatalf("%s: a read failed: %v", kind, err)
	}
	reads := st.reads.Load()
	if reads == 0 {
		b.Fatalf("%s: no reads", kind)
	}
	b.ReportMetric(float64(el.Nanoseconds())/float64(reads), "ns/read")
	b.ReportMetric(float64(el.Nanoseconds())*float64(readers)/float64(reads)/1e3, "us/read/reader")
	b.ReportMetric(float64(reads), "reads")
	b.ReportMetric(float64(st.found.Load()), "found")
	b.ReportMetric(float64(st.foundPrefix.Load()), "found-prefix")
	b.ReportMetric(float64(st.bad.Load()), "bad-values")
	b.Logf("%s: %d readers, %d reads, found %d, not found %d, found in the first %d %d, wrong values %d",
		kind, readers, reads, st.found.Load(), st.notFound.Load(), *flagCheckPrefix, st.foundPrefix.Load(), st.bad.Load())
	if st.bad.Load() > 0 {
		b.Fatalf("%s: %d values read back wrong", kind, st.bad.Load())
	}
}

func benchIterate(b *testing.B, kind string, keysOnly bool) {
	s := store(b, kind)
	var kbuf, vbuf, prev []byte
	var bad, unordered, bytesSeen int64
	var deadline time.Time
	want := b.N
	if *flagIterSeconds > 0 {
		deadline = time.Now().Add(time.Duration(*flagIterSeconds * float64(time.Second)))
		want = int(^uint(0) >> 1)
	}
	b.ResetTimer()
	start := time.Now()
	n := 0
	// badger-bench restarts a scan after 2M items; a timed scan (the large
	// regime) walks the whole data set instead, so that it is not served from
	// the page cache after its first 2M items.
	perScan := 2_000_000
	if !deadline.IsZero() {
		perScan = want
	}
	var seen int64
	for n < want && (deadline.IsZero() || time.Now().Before(deadline)) {
		prev = prev[:0]
		got, err := s.Iterate(keysOnly, min(want-n, perScan), func(k, v []byte) bool {
			kbuf = append(kbuf[:0], k...)
			vbuf = append(vbuf[:0], v...)
			bytesSeen += int64(len(kbuf) + len(vbuf))
			if bytes.Compare(prev, kbuf) >= 0 && len(prev) > 0 {
				unordered++
			}
			prev = append(prev[:0], kbuf...)
			if !keysOnly {
				if k, ok := keys.Index(kbuf); !ok || !checkValue(vbuf, k, uint64(seen)) {
					bad++
				}
			}
			seen++
			return deadline.IsZero() || seen%1024 != 0 || time.Now().Before(deadline)
		})
		if err != nil {
			b.Fatal(err)
		}
		if got == 0 {
			b.Fatalf("%s holds no keys", kind)
		}
		n += got
	}
	el := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(el.Nanoseconds())/float64(n), "ns/item")
	b.ReportMetric(float64(bytesSeen)/1e6/el.Seconds(), "MB/s")
	b.ReportMetric(float64(n), "items")
	b.ReportMetric(float64(bad), "bad-values")
	if bad > 0 || unordered > 0 {
		b.Fatalf("%s: %d wrong values, %d keys out of order", kind, bad, unordered)
	}
}

func BenchmarkReadRandomSett(b *testing.B)      { benchReadRandom(b, "sett") }
func BenchmarkReadRandomSettEnc(b *testing.B)   { benchReadRandom(b, "sett-enc") }
func BenchmarkReadRandomRocks(b *testing.B)     { benchReadRandom(b, "rocksdb") }
func BenchmarkReadRandomBadger(b *testing.B)    { benchReadRandom(b, "badger") }
func BenchmarkReadRandomRocksBlob(b *testing.B) { benchReadRandom(b, "rocksdb-blob") }
func BenchmarkReadRandomPebble(b *testing.B)    { benchReadRandom(b, "pebble") }

// mgetStats is what one MultiGet run counted.
type mgetStats struct {
	pairs                     int64
	getsTime, mgetTime        time.Duration
	getsFound, mgetFound, bad int64
}

// benchMultiGet: one caller alternates between mget_keys point reads one
// after another and one MultiGet of as many keys, each batch the next keys of
// the fixed read sequence, so that both kinds of batch meet the same cache
// state (in the large regime the engine's files were evicted before the
// phase). One op is a pair of batches. The ratio of the two times is the
// MultiGet's gain over the reads a caller would otherwise make.
func benchMultiGet(b *testing.B, kind string) {
	s := store(b, kind)
	total := keys.Count(*flagKeysMil)
	n := *flagMGetKeys
	if n <= 0 {
		b.Fatalf("--mget_keys %d: want at least 1", n)
	}
	var deadline time.Time
	limit := int64(b.N)
	if *flagMGetSeconds > 0 {
		deadline = time.Now().Add(time.Duration(*flagMGetSeconds * float64(time.Second)))
		limit = 1 << 62
	}
	batch := make([][]byte, n)
	idx := make([]int64, n)
	for i := range batch {
		batch[i] = make([]byte, 0, 32)
	}
	fill := func(seq uint64) {
		for i := range batch {
			idx[i] = keys.ReadIndex(seq+uint64(i), total)
			batch[i] = keys.AppendKey(batch[i][:0], *flagValSize, idx[i])
		}
	}
	dst := make([]byte, 0, *flagValSize)
	var st mgetStats
	var seq uint64
	b.ResetTimer()
	for st.pairs < limit && (deadline.IsZero() || time.Now().Before(deadline)) {
		fill(seq)
		t0 := time.Now()
		for i, k := range batch {
			v, err := s.Get(k, dst)
			switch {
			case err == nil:
				st.getsFound++
				if !checkValue(v, idx[i], seq+uint64(i)) {
					st.bad++
				}
				dst = v[:0]
			case errors.Is(err, stores.ErrNotFound):
			default:
				b.Fatalf("%s: a read failed: %v", kind, err)
			}
		}
		st.getsTime += time.Since(t0)
		seq += uint64(n)
		fill(seq)
		t0 = time.Now()
		err := s.MultiGet(batch, func(i int, v []byte) {
			if v == nil {
				return
			}
			st.mgetFound++
			if !checkValue(v, idx[i], seq+uint64(i)) {
				st.bad++
			}
		})
		st.mgetTime += time.Since(t0)
		if err != nil {
			b.Fatalf("%s: a MultiGet failed: %v", kind, err)
		}
		seq += uint64(n)
		st.pairs++
	}
	b.StopTimer()
	if st.pairs == 0 {
		b.Fatalf("%s: no MultiGet ran", kind)
	}
	// The same keys through both paths must give the same answers; checked
	// after the clock, on the first batches, whose pages the run has read.
	for p := uint64(0); p < uint64(min(st.pairs, 16)); p++ {
		fill(p * uint64(2*n))
		got := make([][]byte, n)
		if err := s.MultiGet(batch, func(i int, v []byte) {
			if v != nil {
				got[i] = append([]byte{}, v...)
			}
		}); err != nil {
			b.Fatalf("%s: a MultiGet failed: %v", kind, err)
		}
		for i, k := range batch {
			v, err := s.Get(k, nil)
			if errors.Is(err, stores.ErrNotFound) {
				v = nil
			} else if err != nil {
				b.Fatalf("%s: a read failed: %v", kind, err)
			}
			if (v == nil) != (got[i] == nil) || !bytes.Equal(v, got[i]) {
				b.Fatalf("%s: MultiGet and Get disagree on key %q", kind, k)
			}
		}
	}
	pairs := float64(st.pairs)
	b.ReportMetric(float64(st.mgetTime.Nanoseconds())/pairs/1e3, "us/multiget")
	b.ReportMetric(float64(st.getsTime.Nanoseconds())/pairs/1e3, "us/gets")
	b.ReportMetric(float64(st.mgetTime)/float64(st.getsTime), "multiget/gets")
	b.ReportMetric(pairs, "batches")
	b.ReportMetric(float64(st.mgetFound), "found-multiget")
	b.ReportMetric(float64(st.getsFound), "found-gets")
	b.ReportMetric(float64(st.bad), "bad-values")
	b.Logf("%s: %d batch pairs of %d keys, MultiGet %.1f µs, %d gets %.1f µs per batch, found %d and %d, wrong values %d",
		kind, st.pairs, n, float64(st.mgetTime.Nanoseconds())/pairs/1e3, n, float64(st.getsTime.Nanoseconds())/pairs/1e3,
		st.mgetFound, st.getsFound, st.bad)
	if st.bad > 0 {
		b.Fatalf("%s: %d values read back wrong", kind, st.bad)
	}
	if st.mgetFound == 0 {
		b.Fatalf("%s: MultiGet found no key", kind)
	}
}

func BenchmarkMultiGetSett(b *testing.B)      { benchMultiGet(b, "sett") }
func BenchmarkMultiGetSettEnc(b *testing.B)   { benchMultiGet(b, "sett-enc") }
func BenchmarkMultiGetRocks(b *testing.B)     { benchMultiGet(b, "rocksdb") }
func BenchmarkMultiGetBadger(b *testing.B)    { benchMultiGet(b, "badger") }
func BenchmarkMultiGetRocksBlob(b *testing.B) { benchMultiGet(b, "rocksdb-blob") }
func BenchmarkMultiGetPebble(b *testing.B)    { benchMultiGet(b, "pebble") }

func BenchmarkIterateSettOnlyKeys(b *testing.B)        { benchIterate(b, "sett", true) }
func BenchmarkIterateSettEncOnlyKeys(b *testing.B)     { benchIterate(b, "sett-enc", true) }
func BenchmarkIterateSettEncWithValues(b *testing.B)   { benchIterate(b, "sett-enc", false) }
func BenchmarkIterateRocksOnlyKeys(b *testing.B)       { benchIterate(b, "rocksdb", true) }
func BenchmarkIterateBadgerOnlyKeys(b *testing.B)      { benchIterate(b, "badger", true) }
func BenchmarkIterateRocksBlobOnlyKeys(b *testing.B)   { benchIterate(b, "rocksdb-blob", true) }
func BenchmarkIterateSettWithValues(b *testing.B)      { benchIterate(b, "sett", false) }
func BenchmarkIterateRocksWithValues(b *testing.B)     { benchIterate(b, "rocksdb", false) }
func BenchmarkIterateBadgerWithValues(b *testing.B)    { benchIterate(b, "badger", false) }
func BenchmarkIterateRocksBlobWithValues(b *testing.B) { benchIterate(b, "rocksdb-blob", false) }
func BenchmarkIteratePebbleOnlyKeys(b *testing.B)      { benchIterate(b, "pebble", true) }
func BenchmarkIteratePebbleWithValues(b *testing.B)    { benchIterate(b, "pebble", false) }

// Digest is what TestDigest prints: every engine of a cell must print the same.
type Digest struct {
	Engine    string `json:"engine"`
	Mode      string `json:"mode"`
	Count     int64  `json:"count"`
	Hash      string `json:"hash"`
	Bad       int64  `json:"bad_values"`
	Unordered int64  `json:"unordered"`
}

// TestDigest walks every key (and value, in full mode) of --engine's data set in
// order and prints DIGEST with their count and a CRC-64 over (key, value length,
// value); every value is checked against the value its key must hold.
func TestDigest(t *testing.T) {
	if *flagDigest == "" {
		t.Skip("run with --digest full|keys and --engine")
	}
	if *flagDigest != "full" && *flagDigest != "keys" {
		t.Fatalf("--digest %q: want full or keys", *flagDigest)
	}
	keysOnly := *flagDigest == "keys"
	s := store(t, *flagEngine)
	h := crc64.New(crc64.MakeTable(crc64.ECMA))
	d := Digest{Engine: *flagEngine, Mode: *flagDigest}
	var prev []byte
	var lenBuf [4]byte
	_, err := s.Iterate(keysOnly, int(^uint(0)>>1), func(k, v []byte) bool {
		d.Count++
		if len(prev) > 0 && bytes.Compare(prev, k) >= 0 {
			d.Unordered++
		}
		prev = append(prev[:0], k...)
		binary.LittleEndian.PutUint32(lenBuf[:], uint32(len(k)))
		h.Write(lenBuf[:])
		h.Write(k)
		if !keysOnly {
			binary.LittleEndian.PutUint32(lenBuf[:], uint32(len(v)))
			h.Write(lenBuf[:])
			h.Write(v)
			if ki, ok := keys.Index(k); !ok || !keys.FullCheckValue(v, *flagValSize, ki) {
				d.Bad++
			}
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	d.Hash = fmt.Sprintf("%016x", h.Sum64())
	line, _ := json.Marshal(d)
	fmt.Printf("DIGEST %s\n", line)
	if d.Bad > 0 || d.Unordered > 0 || d.Count == 0 {
		t.Fatalf("%s: %d keys, %d wrong values, %d out of order", *flagEngine, d.Count, d.Bad, d.Unordered)
	}
}

var flagEngine = flag.String("engine", "sett", "TestDigest: the engine whose data set to digest")
