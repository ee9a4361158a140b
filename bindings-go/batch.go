package sett

/*
#include <sett.h>
*/
import "C"

import "runtime"

// Batch collects writes that are applied atomically, in one cgo call and one
// write group: all of them survive a crash or none does. Keys and values are
// copied into the batch when added, so the caller may reuse its slices. One
// goroutine at a time.
type Batch struct {
	db *DB
	b  *C.sett_batch_t
}

// NewBatch starts an empty batch. Commit it (apply and free) or Discard it;
// Write applies it and keeps it for reuse after Clear.
func (d *DB) NewBatch() *Batch {
	return &Batch{db: d, b: C.sett_batch_new()}
}

// Set adds a put. Keys and values are checked when the batch is written.
func (b *Batch) Set(key, value []byte) error {
	if b.b == nil {
		return ErrClosed
	}
	rc := C.sett_batch_put(b.b, ptr(key), C.size_t(len(key)), ptr(value), C.size_t(len(value)))
	runtime.KeepAlive(key)
	runtime.KeepAlive(value)
	return status(rc, nil)
}

// SetEntry adds a put with the entry's user-meta byte and TTL.
func (b *Batch) SetEntry(e *Entry) error {
	if b.b == nil {
		return ErrClosed
	}
	ttl, err := e.ttlMillis()
	if err != nil {
		return err
	}
	rc := C.sett_batch_put_with(b.b, ptr(e.Key), C.size_t(len(e.Key)), ptr(e.Value), C.size_t(len(e.Value)),
		C.uint8_t(e.UserMeta), ttl)
	runtime.KeepAlive(e)
	return status(rc, nil)
}

// Merge adds a merge of operand into key (see DB.Merge); merges of one batch
// on one key combine in order. Writing the batch fails whole with
// ErrMergeOperatorMissing when the database has no merge operator.
func (b *Batch) Merge(key, operand []byte) error {
	if b.b == nil {
		return ErrClosed
	}
	rc := C.sett_batch_merge(b.b, ptr(key), C.size_t(len(key)), ptr(operand), C.size_t(len(operand)))
	runtime.KeepAlive(key)
	runtime.KeepAlive(operand)
	return status(rc, nil)
}

// Delete adds a delete.
func (b *Batch) Delete(key []byte) error {
	if b.b == nil {
		return ErrClosed
	}
	rc := C.sett_batch_delete(b.b, ptr(key), C.size_t(len(key)))
	runtime.KeepAlive(key)
	return status(rc, nil)
}

// DeleteRange adds a delete of every key in [start, end) (see DB.DeleteRange).
// Operations added before it on keys in the range are removed from the batch;
// later ones are kept. The range is checked when the batch is written.
func (b *Batch) DeleteRange(start, end []byte) error {
	if b.b == nil {
		return ErrClosed
	}
	rc := C.sett_batch_delete_range(b.b, ptr(start), C.size_t(len(start)), ptr(end), C.size_t(len(end)))
	runtime.KeepAlive(start)
	runtime.KeepAlive(end)
	return status(rc, nil)
}

// Len is the number of operations in the batch (0 once it is freed).
func (b *Batch) Len() int {
	if b.b == nil {
		return 0
	}
	return int(C.sett_batch_count(b.b))
}

// Clear removes every operation, keeping the batch for reuse.
func (b *Batch) Clear() error {
	if b.b == nil {
		return ErrClosed
	}
	return status(C.sett_batch_clear(b.b), nil)
}

// Write applies the batch atomically and keeps it: Clear it to reuse it, and
// Discard it when done.
func (b *Batch) Write() error {
	if b.b == nil {
		return ErrClosed
	}
	h, err := b.db.handle()
	if err != nil {
		return err
	}
	defer b.db.mu.RUnlock()
	var cerr *C.sett_error_t
	return status(C.sett_write(h, b.b, &cerr), cerr)
}

// Commit applies the batch atomically and frees it (also when it fails).
func (b *Batch) Commit() error {
	if b.b == nil {
		return ErrClosed
	}
	defer b.Discard()
	return b.Write()
}

// Discard frees the batch without applying it; safe to call twice.
func (b *Batch) Discard() {
	if b.b != nil {
		C.sett_batch_free(b.b)
		b.b = nil
	}
}
