// Package sett is the Go binding of sett, an embedded key-value store (an LSM
// tree with a value log, the WiscKey design of Badger), over its stable C ABI
// (libsett, include/sett.h).
//
// # Building
//
// The package links libsett through pkg-config (`#cgo pkg-config: sett`), so
// an installed library is all it needs:
//
//	make install PREFIX=/usr/local          # in the sett repository
//	go get github.com/sett-db/sett-go
//
// For another prefix, point pkg-config at it:
// PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig. The sett.pc file records an rpath to
// its lib directory, so programs find libsett.so at run time without
// LD_LIBRARY_PATH. Inside the repository, `make gotest` uses the sett.pc that
// `make lib` writes to target/pkgconfig (libsett in target/release).
//
// Go's build cache does not key on pkg-config's output: a package built
// against one prefix is reused after PKG_CONFIG_PATH changes to another. When
// switching between libsett installations, run `go clean -cache` or set
// CGO_LDFLAGS to something naming the prefix (such as -L$PREFIX/lib), as the
// repository's Makefile does.
//
// # Use
//
//	db, err := sett.Open(dir, nil)         // or &sett.Options{SyncWrites: true, ...}
//	defer db.Close()
//	err = db.Set(key, value)
//	v, err := db.Get(key)                  // errors.Is(err, sett.ErrNotFound) when absent
//	err = db.Update(func(txn *sett.Txn) error { ... })  // retried on conflict, 64 times
//	err = db.View(func(txn *sett.Txn) error { ... })
//	it, err := db.NewIterator(sett.IteratorOptions{Prefix: p})
//
// The names follow Badger's where sett has the same concept (Options fields
// such as ValueThreshold, SyncWrites, ReadOnly, NumMemtables; Update, View,
// NewTransaction, RunValueLogGC with ErrNoRewrite, DropPrefix, GetSequence,
// Backup), so code written against Badger reads the same.
//
// # Files
//
// db.go (Open, Close, point reads and writes), options.go, errors.go (one
// sentinel per C status code), batch.go, txn.go, iterator.go, maintenance.go
// (flush, flatten, drops, value-log GC, backup and restore, stats),
// sequence.go and bulkload.go.
//
// # Concurrency
//
// A DB and a Sequence may be used from many goroutines at once; Close waits for
// the calls in flight and every later call returns ErrClosed. A Txn, Iterator,
// Batch or BulkLoader is for one goroutine at a time (it may move between
// goroutines). Each of them stays memory-safe after its DB is closed: its calls
// then return ErrClosed.
//
// # Copies
//
// Values cross from C into Go memory once: Get copies the C buffer into a new
// slice, GetInto copies straight into the caller's buffer, and an Iterator
// copies many entries per cgo call into one buffer that Key and Value point
// into (valid until the iterator moves or is closed).
//
// # Not built
//
// The C ABI has no verify call (the CLI's `sett verify` runs it from Rust), so
// this package has none either. Backup and Restore go through a temporary file,
// because the C ABI backs up to and restores from a path only. There is no
// reading of user meta and expiry inside a transaction (the C ABI has
// sett_get_entry on the database only), and the bulk loader takes plain
// key/value pairs (no meta or TTL), as in C.
package sett
