//go:build rocksdb_debian

package stores

// Debian's librocksdb-dev (7.8.3), as packaged: built with assertions. Only for
// the one report row that puts the cost of those checks on record.

/*
#cgo LDFLAGS: -lrocksdb
#include "rocksdb/c.h"
*/
import "C"

// RocksBuild names how the linked RocksDB was built, for the reports.
const RocksBuild = "Debian's librocksdb-dev as packaged (assertions enabled), shared"

// setBlobCache: 7.8.3's C API has no blob cache; its BlobDB row is not run.
func setBlobCache(*C.rocksdb_options_t, *C.rocksdb_cache_t) {}
