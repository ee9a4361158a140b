package stores

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
)

// valueSizeHint remembers the last value size a store returned, so that a Get
// into a caller buffer can size it right the first time.
type valueSizeHint struct{ n atomic.Int64 }

func (h *valueSizeHint) buf() []byte { return make([]byte, 0, max(h.n.Load(), 64)) }
func (h *valueSizeHint) saw(n int)   { h.n.Store(int64(n)) }

// KV is what KVBench and kvserver need from a store.
type KV interface {
	Name() string
	Set(key, value []byte) error
	// BatchSet writes all pairs in one engine batch.
	BatchSet(keys, vals [][]byte) error
	// Get returns a copy of the value; found is false for a missing key.
	Get(key []byte) (value []byte, found bool, err error)
	// BatchGet returns one value per key, nil where absent.
	BatchGet(keys [][]byte) ([][]byte, error)
	Delete(key []byte) error
	// Prefix calls fn for the keys starting with prefix, in order, at most limit
	// of them (values are copied only if fn keeps them); it returns how many.
	Prefix(prefix []byte, limit int, fn func(k, v []byte) bool) (int, error)
	// Clear deletes every key (FLUSHDB).
	Clear() error
	// Flush makes every write so far durable on the device, by the store's own
	// call for it where it has one. What that is for each store is kvStoreInfo's
	// flush line (FlushMeaning), the one table that the report prints too.
	Flush() error
	Close() error
}

// KVOptions apply to every store alike.
type KVOptions struct {
	// Fsync makes each write durable before it returns.
	Fsync bool
	// AOF gives the in-memory baselines an append-only file (as KVBench's had).
	AOF bool
	// CacheBytes is the memory budget every store gets for its own cache, where
	// it has one (0: DefaultCacheBytes); KVCacheSetting says what each does with it.
	CacheBytes int64
}

// cacheBytes is the budget in force.
func (o KVOptions) cacheBytes() int64 {
	if o.CacheBytes > 0 {
		return o.CacheBytes
	}
	return DefaultCacheBytes
}

// KVKinds lists the stores of KVBench.
var KVKinds = kvKinds()

func kvKinds() []string {
	all := []string{"sett", "badger", "pebble", "bbolt", "bolt", "goleveldb", "rocksdb", "pogreb", "nutsdb", "buntdb", "map", "btree"}
	return slices.DeleteFunc(all, func(k string) bool { _, absent := AbsentKV[k]; return absent })
}

// AbsentKV names the stores of the seed's KVBench table that this build does
// not have, each with why (for a module that does not resolve, the exact error
// of go get). All of them resolve and build (pogreb, nutsdb, buntdb, bolt):
// only a race-detector build lacks one, bolt. kvrun's report prints a line for
// each entry.
var AbsentKV = absentKV()

func absentKV() map[string]string {
	m := map[string]string{}
	if !boltdbBuilt {
		m["bolt"] = boltdbRaceWhy
	}
	return m
}

// Persistent reports whether a store keeps its data on disk without an AOF.
// buntdb does: it holds every key in memory, but its append-only file is
// always on.
func Persistent(kind string) bool { return kind != "map" && kind != "btree" }

// OpenKV opens store kind in dir.
func OpenKV(kind, dir string, o KVOptions) (KV, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	switch kind {
	case "sett":
		return openSettKV(dir, o)
	case "badger":
		return openBadgerKV(dir, o)
	case "pebble":
		return openPebbleKV(dir, o)
	case "bbolt":
		return openBboltKV(dir, o)
	case "bolt":
		return openBoltdbKV(dir, o)
	case "goleveldb":
		return openLevelKV(dir, o)
	case "rocksdb":
		return openRocksKV(dir, o)
	case "pogreb":
		return openPogrebKV(dir, o)
	case "nutsdb":
		return openNutsKV(dir, o)
	case "buntdb":
		return openBuntKV(dir, o)
	case "map":
		return openMemKV(dir, o, false)
	case "btree":
		return openMemKV(dir, o, true)
	}
	return nil, fmt.Errorf("unknown store %q (want one of %v)", kind, KVKinds)
}

// prefixEnd is the smallest key above every key starting with p (nil: none).
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// syncFile fsyncs path through a descriptor of its own: on Linux an fsync
// writes back the file's dirty pages whoever wrote them, so it makes durable
// what a store without a sync call of its own has written.
func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// syncDir fsyncs every regular file in dir, and dir itself (for the names of
// files made since the last sync).
func syncDir(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		// A file the store removed since the listing needs no sync.
		if err := syncFile(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return syncFile(dir)
}
