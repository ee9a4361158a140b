package stores

// The release build that scripts/rocksdb-release.sh installs under target/rocksdb,
// linked statically: the programs carry it, so no runtime search can find another.

/*
#cgo pkg-config: rocksdb-release
#include "rocksdb/c.h"
*/
import "C"

// RocksBuild names how the linked RocksDB was built, for the reports.
const RocksBuild = "release build (NDEBUG, -O2, -march=native; scripts/rocksdb-release.sh), static"

// setBlobCache lets BlobDB's values share the block cache, as RocksDB's BlobDB
// documentation recommends, so that one budget covers both.
func setBlobCache(opts *C.rocksdb_options_t, cache *C.rocksdb_cache_t) {
	C.rocksdb_options_set_blob_cache(opts, cache)
}
