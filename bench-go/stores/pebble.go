package stores

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/sstable/block"
)

// PebbleVersion is the module version go.mod pins (the Go module proxy's newest
// v2 here); a test holds it to go.mod.
const PebbleVersion = "v2.1.7"

// quietLogger keeps Pebble's informational lines (WAL replay, every
// compaction) out of the phase logs; its errors still reach stderr.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any) {}
func (quietLogger) Errorf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "pebble: "+format+"\n", args...)
}
func (quietLogger) Fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "pebble: fatal: "+format+"\n", args...)
	os.Exit(2)
}

type pebbleStore struct {
	db *pebble.DB
	wo *pebble.WriteOptions
	ro bool
}

// pebbleSettings is what openPebble sets, for the reports.
func pebbleSettings(o Options) string {
	return fmt.Sprintf("Pebble %s (pure Go): block cache %d MiB (the memory budget), FormatNewest with columnar blocks, "+
		"value separation into blob files (MinimumSize %d B, the suite's threshold; MaxBlobReferenceDepth 10, RewriteMinimumAge 5m, "+
		"TargetGarbageRatio 0.2), bloom filter 10 bits/key on every level, 4 KiB blocks, %s, "+
		"and the settings of Pebble's own benchmark tool (cmd/pebble): 64 MiB memtables, MemTableStopWritesThreshold 4, "+
		"L0CompactionThreshold 2, L0StopWritesThreshold 1000, LBaseMaxBytes 64 MiB, 256 KiB index blocks; "+
		"compaction concurrency 1 to cores; at the end of populate: flush the memtables before close",
		PebbleVersion, cacheOrDefault(o)>>20, ValueThreshold, pebbleCodec(o))
}

func pebbleCodec(o Options) string {
	if o.Compression == "zstd" {
		return "zstd (level 3) on every level"
	}
	return "no compression"
}

func cacheOrDefault(o Options) int64 {
	if o.CacheBytes > 0 {
		return o.CacheBytes
	}
	return DefaultCacheBytes
}

// pebbleOptions builds the options pebbleSettings describes from o: the one
// place both badger-bench and KVBench take Pebble's settings from. The caller
// opens with them, then drops its reference to opts.Cache (the DB holds one).
func pebbleOptions(o Options) (*pebble.Options, *pebble.WriteOptions, error) {
	if err := CheckCompression(o.Compression); err != nil {
		return nil, nil, err
	}
	profile := block.NoCompression
	switch o.Compression {
	case "zstd":
		profile = block.ZstdCompression
	case "lz4":
		return nil, nil, errors.New("pebble: no LZ4 codec (it offers snappy, zstd and minlz)")
	}
	opts := &pebble.Options{
		Cache:                       pebble.NewCache(cacheOrDefault(o)),
		FormatMajorVersion:          pebble.FormatNewest,
		L0CompactionThreshold:       2,
		L0StopWritesThreshold:       1000,
		LBaseMaxBytes:               64 << 20,
		MaxOpenFiles:                16384,
		MemTableSize:                64 << 20,
		MemTableStopWritesThreshold: 4,
		ReadOnly:                    o.ReadOnly,
		Logger:                      quietLogger{},
		CompactionConcurrencyRange: func() (int, int) {
			return 1, runtime.NumCPU()
		},
	}
	opts.Experimental.EnableColumnarBlocks = func() bool { return true }
	opts.Experimental.ValueSeparationPolicy = func() pebble.ValueSeparationPolicy {
		return pebble.ValueSeparationPolicy{
			Enabled:               true,
			MinimumSize:           ValueThreshold,
			MaxBlobReferenceDepth: 10,
			RewriteMinimumAge:     5 * time.Minute,
			TargetGarbageRatio:    0.2,
		}
	}
	for i := range opts.Levels {
		l := &opts.Levels[i]
		l.BlockSize = 4 << 10
		l.IndexBlockSize = 256 << 10
		l.FilterPolicy = bloom.FilterPolicy(10)
		l.FilterType = pebble.TableFilter
		l.Compression = func() *block.CompressionProfile { return profile }
	}
	opts.FlushSplitBytes = opts.TargetFileSizes[0]
	opts.EnsureDefaults()
	wo := pebble.NoSync
	if o.Sync {
		wo = pebble.Sync
	}
	return opts, wo, nil
}

// openPebbleDB opens Pebble in dir with pebbleOptions(o).
func openPebbleDB(dir string, o Options) (*pebble.DB, *pebble.WriteOptions, error) {
	opts, wo, err := pebbleOptions(o)
	if err != nil {
		return nil, nil, err
	}
	defer opts.Cache.Unref()
	db, err := pebble.Open(dir, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("pebble: %w", err)
	}
	return db, wo, nil
}

// openPebble opens Pebble v2 with the settings pebbleSettings describes.
func openPebble(dir string, o Options) (Store, error) {
	db, wo, err := openPebbleDB(dir, o)
	if err != nil {
		return nil, err
	}
	return &pebbleStore{db: db, wo: wo, ro: o.ReadOnly}, nil
}

func (s *pebbleStore) Name() string { return "pebble" }

func (s *pebbleStore) WriteBatch(keys, vals [][]byte) error {
	b := s.db.NewBatch()
	defer b.Close()
	for i := range keys {
		if err := b.Set(keys[i], vals[i], nil); err != nil {
			return err
		}
	}
	return b.Commit(s.wo)
}

func (s *pebbleStore) Get(key, dst []byte) ([]byte, error) {
	v, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	out := append(dst[:0], v...)
	return out, closer.Close()
}

// MultiGet: Pebble has no batched read, so its users look keys up one after
// another; a snapshot gives the batch one read point, as the other engines'.
func (s *pebbleStore) MultiGet(keys [][]byte, fn func(i int, v []byte)) error {
	snap := s.db.NewSnapshot()
	defer snap.Close()
	for i, k := range keys {
		v, closer, err := snap.Get(k)
		if errors.Is(err, pebble.ErrNotFound) {
			fn(i, nil)
			continue
		}
		if err != nil {
			return err
		}
		fn(i, v)
		if err := closer.Close(); err != nil {
			return err
		}
	}
	return nil
}

// Iterate hands fn Pebble's own slices. Keys-only asks for no value, so a
// separated value's blob file is not read (Pebble fetches values lazily).
func (s *pebbleStore) Iterate(keysOnly bool, limit int, fn func(k, v []byte) bool) (int, error) {
	it, err := s.db.NewIter(nil)
	if err != nil {
		return 0, err
	}
	n := 0
	for ok := it.First(); ok && n < limit; ok = it.Next() {
		n++
		var v []byte
		if !keysOnly {
			if v, err = it.ValueAndErr(); err != nil {
				_ = it.Close()
				return n, err
			}
		}
		if !fn(it.Key(), v) {
			break
		}
	}
	if err := it.Error(); err != nil {
		_ = it.Close()
		return n, err
	}
	return n, it.Close()
}

// Backlog: flushes and compactions in progress (blob-file rewrites included),
// the compaction debt Pebble estimates, and immutable memtables waiting.
func (s *pebbleStore) Backlog() (bool, string, error) {
	m := s.db.Metrics()
	idle := m.Flush.NumInProgress == 0 && m.Compact.NumInProgress == 0 && m.Compact.EstimatedDebt == 0 && m.MemTable.Count <= 1
	desc := fmt.Sprintf("flushes=%d compactions=%d debt=%d memtables=%d L0 files=%d",
		m.Flush.NumInProgress, m.Compact.NumInProgress, m.Compact.EstimatedDebt, m.MemTable.Count, m.Levels[0].TablesCount)
	return idle, desc, nil
}

// Close flushes the memtables first, so that Pebble ends populate in the same
// state as the others (data in tables, logs synced).
func (s *pebbleStore) Close() error {
	var err error
	if !s.ro {
		err = s.db.Flush()
	}
	if cerr := s.db.Close(); err == nil {
		err = cerr
	}
	return err
}
