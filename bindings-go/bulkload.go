package sett

/*
#include <sett.h>
*/
import "C"

import "runtime"

// BulkLoader loads sorted key/value pairs into an empty database straight into
// bottom-level tables, without the WAL, memtables or compactions (as Badger's
// StreamWriter). Other writes fail until it finishes. One goroutine at a time.
type BulkLoader struct {
	l *C.sett_bulk_loader_t
}

// NewBulkLoader starts a bulk load. The database must be empty
// (ErrInvalidArgument otherwise). Finish or Abort it.
func (d *DB) NewBulkLoader() (*BulkLoader, error) {
	var l *C.sett_bulk_loader_t
	err := d.call(func(h *C.sett_db_t, cerr **C.sett_error_t) C.int {
		return C.sett_bulk_loader_new(h, &l, cerr)
	})
	if err != nil {
		return nil, err
	}
	return &BulkLoader{l: l}, nil
}

// Add adds the next entry; keys must be strictly increasing
// (ErrInvalidArgument otherwise).
func (b *BulkLoader) Add(key, value []byte) error {
	if b.l == nil {
		return ErrClosed
	}
	var cerr *C.sett_error_t
	rc := C.sett_bulk_loader_add(b.l, ptr(key), C.size_t(len(key)), ptr(value), C.size_t(len(value)), &cerr)
	runtime.KeepAlive(key)
	runtime.KeepAlive(value)
	return status(rc, cerr)
}

// AddEntry adds the next entry with its user-meta byte and TTL (counted from
// this call, rounded up to whole seconds); keys must be strictly increasing.
func (b *BulkLoader) AddEntry(e *Entry) error {
	if b.l == nil {
		return ErrClosed
	}
	ttl, err := e.ttlMillis()
	if err != nil {
		return err
	}
	var cerr *C.sett_error_t
	rc := C.sett_bulk_loader_add_with(b.l, ptr(e.Key), C.size_t(len(e.Key)), ptr(e.Value), C.size_t(len(e.Value)),
		C.uint8_t(e.UserMeta), ttl, &cerr)
	runtime.KeepAlive(e.Key)
	runtime.KeepAlive(e.Value)
	return status(rc, cerr)
}

// Finish makes the loaded data durable and visible, frees the loader and
// returns the number of entries loaded. The loader is finished either way.
func (b *BulkLoader) Finish() (uint64, error) {
	if b.l == nil {
		return 0, ErrClosed
	}
	var n C.uint64_t
	var cerr *C.sett_error_t
	err := status(C.sett_bulk_loader_finish(b.l, &n, &cerr), cerr)
	C.sett_bulk_loader_free(b.l)
	b.l = nil
	return uint64(n), err
}

// Abort abandons an unfinished load (its files are removed) and frees the
// loader; safe to call twice and after Finish.
func (b *BulkLoader) Abort() {
	if b.l != nil {
		C.sett_bulk_loader_free(b.l)
		b.l = nil
	}
}
