package stores

import (
	"fmt"
	"runtime/debug"
)

// kvStoreInfo is what the KVBench report says of one store: the one table
// behind KV.Flush's doc, kvrun's header and the tests that check both.
type kvStoreInfo struct {
	// engine names the engine and its version.
	engine func() string
	// cache says what the store does with a budget of mib MiB.
	cache func(mib int64) string
	// flush says what Flush does.
	flush string
	// note is anything else a reader of the numbers must know ("" for none).
	note string
}

var kvStoreInfos = map[string]kvStoreInfo{
	"sett": {
		engine: func() string { return "sett " + settLibVersion() + " (C ABI)" },
		cache: func(mib int64) string {
			return fmt.Sprintf("cache_size %d MiB: table indexes, bloom filters and decompressed blocks; "+
				"uncompressed blocks and the value log are read through the page cache", mib)
		},
		flush: "Flush: memtables written as tables and synced (sett has no log-only sync call)",
	},
	"badger": {
		engine: func() string { return "Badger " + moduleVersion("github.com/dgraph-io/badger/v4") },
		cache: func(int64) string {
			return "BlockCacheSize 0, IndexCacheSize 0, as badger-bench: without compression or encryption Badger's " +
				"documentation says a block cache only adds overhead; tables are memory-mapped and read through the page cache " +
				"(the budget is not used)"
		},
		flush: "DB.Sync: the value log and the memtable's log synced",
		note:  "ValueThreshold 1024 B (sett's), no compression",
	},
	"pebble": {
		engine: func() string { return "Pebble " + moduleVersion("github.com/cockroachdb/pebble/v2") },
		cache: func(mib int64) string {
			return fmt.Sprintf("block cache %d MiB (pebble.NewCache)", mib)
		},
		flush: "LogData(nil, Sync): an empty log record committed with Sync, which syncs the WAL up to it",
		note: "badger-bench's settings (pebbleOptions): Pebble's benchmark tool's memtable and L0 settings, bloom filters, " +
			"no compression, value separation from 1024 B; its WAL files are preallocated to 110% of the 64 MiB memtable " +
			"and recycled, so their allocated size counts in DiskUsage",
	},
	"bbolt": {
		engine: func() string { return "bbolt " + moduleVersion("go.etcd.io/bbolt") },
		cache: func(int64) string {
			return "no cache of its own: the file is memory-mapped and read through the page cache"
		},
		flush: "DB.Sync: fdatasync of its file (with fsync every commit syncs already)",
	},
	"bolt": {
		engine: func() string {
			return "bolt " + moduleVersion("github.com/boltdb/bolt") + " (the original of bbolt, unmaintained)"
		},
		cache: func(int64) string {
			return "no cache of its own: the file is memory-mapped and read through the page cache"
		},
		flush: "DB.Sync: fdatasync of its file (with fsync every commit syncs already)",
	},
	"goleveldb": {
		engine: func() string { return "goleveldb " + moduleVersion("github.com/syndtr/goleveldb") },
		cache: func(mib int64) string {
			return fmt.Sprintf("BlockCacheCapacity %d MiB (its default is 8 MiB)", mib)
		},
		flush: "a synced write (Delete of a key outside the key space with Sync): it has no sync call and skips empty batches",
		note:  "no compression",
	},
	"rocksdb": {
		engine: func() string { return "RocksDB " + RocksVersion() + " (C API, " + RocksBuild + ")" },
		cache: func(mib int64) string {
			return fmt.Sprintf("LRU block cache %d MiB; index and filter blocks in table-reader memory (its default)", mib)
		},
		flush: "FlushWAL(sync): the WAL written out and synced",
		note:  "badger-bench's settings (openRocks); Set is one rocksdb_put, BatchSet one C call that builds and writes the batch",
	},
	"pogreb": {
		engine: func() string { return "pogreb " + moduleVersion("github.com/akrylysov/pogreb") },
		cache: func(int64) string {
			return "no cache of its own: index and log memory-mapped (its default), read through the page cache"
		},
		flush: "DB.Sync: its current log segment synced (the index is rebuilt from the log after a crash)",
		note: "Prefix is a full scan (pogreb has a hash index and only an unordered walk of every item): the matching keys " +
			"are collected and sorted, so its cost grows with the store, not the 10 keys; no batches: BatchSet puts one by one " +
			"(not atomic), with fsync one DB.Sync after each Set and Delete and one per batch",
	},
	"nutsdb": {
		engine: func() string { return "NutsDB " + moduleVersion("github.com/nutsdb/nutsdb") },
		cache: func(int64) string {
			return "no cache to size: its default mode (HintKeyValAndRAMIdxMode) keeps every key and value in memory " +
				"(the budget is not used; its only cache, HintKeyAndRAMIdxCacheSize, is for the keys-only mode and counts entries)"
		},
		flush: "its files fsynced from outside: NutsDB has no sync call (SyncEnable syncs inside each commit, on with fsync)",
		note:  "its defaults otherwise: FileIO, 256 MiB data files (sparse: apparent size above allocated)",
	},
	"buntdb": {
		engine: func() string { return "BuntDB " + moduleVersion("github.com/tidwall/buntdb") },
		cache: func(int64) string {
			return "no cache: an in-memory store (every key and value in memory) with an append-only file"
		},
		flush: "its file fsynced from outside: BuntDB has no sync call (SyncPolicy Always with fsync, Never without)",
	},
	"map": {
		engine: func() string { return "Go map behind an RWMutex (baseline)" },
		cache:  func(int64) string { return "in memory: no cache" },
		flush:  "with an AOF: the AOF flushed and fsynced; without one (the report's runs): nothing",
	},
	"btree": {
		engine: func() string {
			return "google/btree " + moduleVersion("github.com/google/btree") + " behind an RWMutex (baseline)"
		},
		cache: func(int64) string { return "in memory: no cache" },
		flush: "with an AOF: the AOF flushed and fsynced; without one (the report's runs): nothing",
	},
}

// kvCacheReader is a store that can read its cache's capacity back from the
// engine, for the tests that check the budget reaches it.
type kvCacheReader interface{ cacheCapacity() (int64, error) }

// KVEngine names store kind's engine and version, for the reports.
func KVEngine(kind string) string { return kvInfo(kind).engine() }

// KVCacheSetting says what store kind does with o's cache budget.
func KVCacheSetting(kind string, o KVOptions) string { return kvInfo(kind).cache(o.cacheBytes() >> 20) }

// FlushMeaning says what store kind's Flush does.
func FlushMeaning(kind string) string { return kvInfo(kind).flush }

// KVNote is what else a reader of store kind's numbers must know ("" if nothing).
func KVNote(kind string) string { return kvInfo(kind).note }

func kvInfo(kind string) kvStoreInfo {
	if i, ok := kvStoreInfos[kind]; ok {
		return i
	}
	unknown := func() string { return "unknown store " + kind }
	return kvStoreInfo{engine: unknown, cache: func(int64) string { return unknown() }, flush: unknown()}
}

// kvModuleVersions are the versions go.mod requires of the stores' modules
// (a test holds them to it): test binaries carry no module list to read them
// from at run time.
var kvModuleVersions = map[string]string{
	"github.com/dgraph-io/badger/v4":   BadgerVersion,
	"github.com/cockroachdb/pebble/v2": PebbleVersion,
	"go.etcd.io/bbolt":                 "v1.5.0",
	"github.com/boltdb/bolt":           "v1.3.1",
	"github.com/syndtr/goleveldb":      "v1.0.0",
	"github.com/akrylysov/pogreb":      "v0.10.2",
	"github.com/nutsdb/nutsdb":         "v1.1.0",
	"github.com/tidwall/buntdb":        "v1.3.0",
	"github.com/google/btree":          "v1.1.3",
}

// moduleVersion is the version the build's module list gives path; a test
// binary has no such list, so there it is the version go.mod requires
// (kvModuleVersions, which a test holds to go.mod).
func moduleVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == path {
				return m.Version
			}
		}
	}
	if v, ok := kvModuleVersions[path]; ok {
		return v
	}
	return "(version unknown)"
}
