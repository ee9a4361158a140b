// Package stores puts every engine of the benchmarks behind one small
// interface, so that populate, bench_test.go and kvbench measure them alike.
package stores

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// ValueThreshold is the value size from which sett and Badger keep values in
// their value log (sett's default). RocksDB's BlobDB row uses it as min_blob_size.
const ValueThreshold = 1024

// ErrNotFound is returned by Get for a missing key, whatever the engine.
var ErrNotFound = errors.New("key not found")

// Options shared by every engine, so that a comparison is fair.
type Options struct {
	// Sync makes every write batch durable before it returns (off by default).
	Sync bool
	// ReadOnly opens for reading only.
	ReadOnly bool
	// CacheBytes is the memory budget for an engine's own caches (RocksDB's
	// block cache, sett's cache_size). What an engine reads through the page
	// cache by design (sett's uncompressed blocks and value log, Badger
	// without compression) its settings say.
	CacheBytes int64
	// Compression is the codec of table data blocks on every level for sett
	// and RocksDB: "" or "none" (the suites' setting), "lz4" or "zstd" (at
	// each engine's default level, 3). Badger ignores it.
	Compression string
	// ValueThreshold overrides ValueThreshold for sett (0: ValueThreshold),
	// so that values a codec should see stay in its tables.
	ValueThreshold int
	// SettOptions is a JSON object of sett.Options fields by their Go names,
	// laid over the suite's settings for sett and sett-enc ("": none), so
	// that an option screen is a flag, not a rebuild. Other engines ignore it.
	SettOptions string
}

// CheckCompression refuses a codec name the stores do not know.
func CheckCompression(name string) error {
	switch name {
	case "", "none", "lz4", "zstd":
		return nil
	}
	return fmt.Errorf("unknown compression %q (want none, lz4 or zstd)", name)
}

// DefaultCacheBytes is the memory budget when none is given: Badger's default
// block cache, and a figure RocksDB's tuning guide would not call small.
const DefaultCacheBytes = 256 << 20

// Store is one engine.
type Store interface {
	// Name is the engine's short name (sett, sett-enc, rocksdb, rocksdb-blob, badger, pebble).
	Name() string
	// WriteBatch writes keys[i] → vals[i] atomically.
	WriteBatch(keys, vals [][]byte) error
	// Get copies key's value into dst's spare capacity (or a new slice) and
	// returns it; ErrNotFound when absent.
	Get(key, dst []byte) ([]byte, error)
	// MultiGet looks keys up together, through the engine's own batched read
	// where it has one (sett's get_many, RocksDB's batched MultiGet) and a
	// loop of point reads in one read view where it has none (Badger,
	// Pebble), and calls fn with each key's index and value (nil when absent),
	// in the order of keys. The value is valid only during the call.
	MultiGet(keys [][]byte, fn func(i int, v []byte)) error
	// Iterate walks forward from the first key, calling fn with each key (and
	// value unless keysOnly) until fn returns false or limit items were seen.
	// The slices are valid only during the call.
	Iterate(keysOnly bool, limit int, fn func(k, v []byte) bool) (int, error)
	// Backlog reports whether the engine has flushes or compactions pending or
	// running (idle false), and describes what it has, in its own terms.
	Backlog() (idle bool, desc string, err error)
	// Close flushes the memtables, syncs the logs and closes the engine.
	Close() error
}

// WriteAccounter is an engine that accounts for its own writes since open:
// per level, the bytes flushes and compactions wrote and read (RocksDB's
// compaction stats, sett's Stats). The harness logs it at the end of
// populate and once settled, to break the device-bytes column down.
type WriteAccounter interface {
	WriteAccount() (string, error)
}

// Settings describes how Open configures engine kind, for the reports.
func Settings(kind string, o Options) string {
	switch kind {
	case "sett":
		return settSettings(o)
	case "sett-enc":
		return settSettings(o) + settEncSettings
	case "rocksdb":
		return rocksSettings(o, false)
	case "rocksdb-blob":
		return rocksSettings(o, true)
	case "badger":
		return badgerSettings(o)
	case "pebble":
		return pebbleSettings(o)
	}
	return "unknown engine " + kind
}

// WaitIdle polls s.Backlog until the engine has reported no pending work for
// QuietPeriod or timeout passes; it returns how long it waited, whether it became idle, and the last
// description of its backlog.
func WaitIdle(s Store, timeout time.Duration) (time.Duration, bool, string, error) {
	start := time.Now()
	var quietSince time.Time
	for {
		idle, desc, err := s.Backlog()
		if err != nil || time.Since(start) >= timeout {
			return time.Since(start), idle, desc, err
		}
		switch {
		case !idle:
			quietSince = time.Time{}
		case quietSince.IsZero():
			quietSince = time.Now()
		case time.Since(quietSince) >= QuietPeriod:
			return time.Since(start), true, desc, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// QuietPeriod is how long an engine must report no pending work, sample
// after sample, before WaitIdle calls it settled. One idle sample is not
// enough: sett marks itself idle after a second without writes and only then
// merges its last L0 tables down (and its value-log GC follows the garbage
// that finds), which a read phase started on the first sample ran into.
const QuietPeriod = 3 * time.Second

// Kinds lists the engines of the badger-bench suite. sett-enc is sett with
// encryption at rest, beside sett in every run so that its cost is measured
// on the same machine at the same time.
var Kinds = []string{"sett", "sett-enc", "rocksdb", "badger", "pebble"}

// Open opens engine kind in dir.
func Open(kind, dir string, o Options) (Store, error) {
	if !o.ReadOnly {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
	}
	switch kind {
	case "sett":
		return openSett(dir, o, false)
	case "sett-enc":
		return openSett(dir, o, true)
	case "rocksdb":
		return openRocks(dir, o, false)
	case "rocksdb-blob":
		return openRocks(dir, o, true)
	case "badger":
		return openBadger(dir, o)
	case "pebble":
		return openPebble(dir, o)
	}
	return nil, fmt.Errorf("unknown store %q (want one of sett, sett-enc, rocksdb, rocksdb-blob, badger, pebble)", kind)
}

// DiskUsage sums the apparent size and the allocated blocks of every file under dir.
func DiskUsage(dir string) (apparent, allocated int64, err error) {
	err = filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if info.Mode().IsRegular() {
			apparent += info.Size()
			if st, ok := info.Sys().(*syscall.Stat_t); ok {
				allocated += st.Blocks * 512
			}
		}
		return nil
	})
	return apparent, allocated, err
}

// Version is the version of engine kind that this program runs: read from the
// linked library for sett and RocksDB, from the build's module list (or go.mod's
// pin) for the Go engines.
func Version(kind string) string {
	switch kind {
	case "sett", "sett-enc":
		return "sett " + settLibVersion()
	case "rocksdb", "rocksdb-blob":
		return "RocksDB " + RocksVersion() + ", " + RocksBuild
	case "badger":
		return "Badger " + moduleVersion("github.com/dgraph-io/badger/v4")
	case "pebble":
		return "Pebble " + moduleVersion("github.com/cockroachdb/pebble/v2")
	}
	return "unknown engine " + kind
}
