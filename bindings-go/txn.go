package sett

/*
#include <sett.h>
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
)

// UpdateRetries is how many times Update runs its function when the commit
// conflicts, as Rust's Db::update and Python's Db.update.
const UpdateRetries = 64

// Txn is a transaction: an MVCC snapshot plus buffered writes, committed
// atomically with optimistic conflict detection (SSI). One goroutine at a
// time.
type Txn struct {
	t *C.sett_txn_t
}

// NewTransaction begins a transaction, read-write if update is true, else
// read-only. Commit or Discard it (defer txn.Discard() is safe after Commit).
// Update and View do this for you.
func (d *DB) NewTransaction(update bool) (*Txn, error) {
	h, err := d.handle()
	if err != nil {
		return nil, err
	}
	defer d.mu.RUnlock()
	var t *C.sett_txn_t
	var cerr *C.sett_error_t
	if err := status(C.sett_txn_begin(h, cbool(update), &t, &cerr), cerr); err != nil {
		return nil, err
	}
	return &Txn{t: t}, nil
}

// Update runs fn in a read-write transaction and commits it. When the commit
// conflicts with a transaction that committed after this one began, fn runs
// again in a new transaction, up to UpdateRetries times in all; then the error
// wraps ErrConflict. An error returned by fn discards the transaction and is
// returned as is (not retried). fn must not keep txn.
func (d *DB) Update(fn func(txn *Txn) error) error {
	for attempt := 0; attempt < UpdateRetries; attempt++ {
		err := d.updateOnce(fn)
		if err == nil || !isCommitConflict(err) {
			return unwrapCommit(err)
		}
	}
	return fmt.Errorf("sett: transaction still conflicted after %d attempts: %w", UpdateRetries, ErrConflict)
}

// commitError marks an error that came from Commit, so that Update retries
// only a conflict of the commit, not an ErrConflict returned by fn.
type commitError struct{ err error }

func (c commitError) Error() string { return c.err.Error() }
func (c commitError) Unwrap() error { return c.err }

func isCommitConflict(err error) bool {
	c, ok := err.(commitError)
	return ok && errors.Is(c.err, ErrConflict)
}

func unwrapCommit(err error) error {
	if c, ok := err.(commitError); ok {
		return c.err
	}
	return err
}

func (d *DB) updateOnce(fn func(txn *Txn) error) error {
	txn, err := d.NewTransaction(true)
	if err != nil {
		return err
	}
	defer txn.Discard()
	if err := fn(txn); err != nil {
		return err
	}
	if err := txn.Commit(); err != nil {
		return commitError{err}
	}
	return nil
}

// View runs fn in a read-only transaction: a stable snapshot while writes go
// on. Writes inside it return ErrInvalidArgument.
func (d *DB) View(fn func(txn *Txn) error) error {
	txn, err := d.NewTransaction(false)
	if err != nil {
		return err
	}
	defer txn.Discard()
	return fn(txn)
}

// Get returns a copy of key's value as the transaction sees it (its snapshot
// plus its own writes), or ErrNotFound. In a read-write transaction the read
// is tracked for conflict detection.
func (t *Txn) Get(key []byte) ([]byte, error) {
	if t.t == nil {
		return nil, ErrClosed
	}
	return takeValue(key, func(buf *C.sett_buf_t, cerr **C.sett_error_t) C.int {
		return C.sett_txn_get(t.t, ptr(key), C.size_t(len(key)), buf, cerr)
	})
}

// GetItem reads key with its metadata as the transaction sees it, as
// DB.GetItem. For a key this transaction wrote itself (not yet committed),
// UserMeta is the meta it wrote and Version and ExpiresAt are 0 (both are set
// at commit).
func (t *Txn) GetItem(key []byte) (*Item, error) {
	if t.t == nil {
		return nil, ErrClosed
	}
	return getEntry(key, func(out *entryOut) C.int {
		return C.sett_txn_get_entry(t.t, ptr(key), C.size_t(len(key)), &out.buf, &out.meta, &out.expires, &out.version, &out.cerr)
	})
}

// Set buffers a put, applied at Commit.
func (t *Txn) Set(key, value []byte) error {
	if t.t == nil {
		return ErrClosed
	}
	var cerr *C.sett_error_t
	rc := C.sett_txn_put(t.t, ptr(key), C.size_t(len(key)), ptr(value), C.size_t(len(value)), &cerr)
	runtime.KeepAlive(key)
	runtime.KeepAlive(value)
	return status(rc, cerr)
}

// SetEntry buffers a put with the entry's user-meta byte and TTL. ErrTooBig
// when the transaction would exceed Options.MaxTxnSize: the put is not taken
// and the transaction stays usable (commit it and start another, as with
// Badger's ErrTxnTooBig).
func (t *Txn) SetEntry(e *Entry) error {
	if t.t == nil {
		return ErrClosed
	}
	ttl, err := e.ttlMillis()
	if err != nil {
		return err
	}
	var cerr *C.sett_error_t
	rc := C.sett_txn_put_with(t.t, ptr(e.Key), C.size_t(len(e.Key)), ptr(e.Value), C.size_t(len(e.Value)),
		C.uint8_t(e.UserMeta), ttl, &cerr)
	runtime.KeepAlive(e)
	return status(rc, cerr)
}

// Merge buffers a merge of operand into key (see DB.Merge), applied at
// Commit; the transaction's reads see it folded. ErrMergeOperatorMissing
// when the database has no merge operator, ErrTooBig as SetEntry (the merge
// is not taken either way).
func (t *Txn) Merge(key, operand []byte) error {
	if t.t == nil {
		return ErrClosed
	}
	var cerr *C.sett_error_t
	rc := C.sett_txn_merge(t.t, ptr(key), C.size_t(len(key)), ptr(operand), C.size_t(len(operand)), &cerr)
	runtime.KeepAlive(key)
	runtime.KeepAlive(operand)
	return status(rc, cerr)
}

// Delete buffers a delete.
func (t *Txn) Delete(key []byte) error {
	if t.t == nil {
		return ErrClosed
	}
	var cerr *C.sett_error_t
	rc := C.sett_txn_delete(t.t, ptr(key), C.size_t(len(key)), &cerr)
	runtime.KeepAlive(key)
	return status(rc, cerr)
}

// DeleteRange buffers a delete of every key in [start, end) (an empty end: no
// upper bound): the transaction's reads and iterators stop seeing the range
// (and its own earlier writes there); its later writes are kept. Applied at
// Commit with the rest of the transaction.
func (t *Txn) DeleteRange(start, end []byte) error {
	if t.t == nil {
		return ErrClosed
	}
	var cerr *C.sett_error_t
	rc := C.sett_txn_delete_range(t.t, ptr(start), C.size_t(len(start)), ptr(end), C.size_t(len(end)), &cerr)
	runtime.KeepAlive(start)
	runtime.KeepAlive(end)
	return status(rc, cerr)
}

// Commit applies the transaction's writes atomically. ErrConflict when a key it
// read was written by a transaction that committed after it began: begin a new
// one and retry. The transaction is finished either way (later calls return
// ErrClosed).
func (t *Txn) Commit() error {
	if t.t == nil {
		return ErrClosed
	}
	var cerr *C.sett_error_t
	err := status(C.sett_txn_commit(t.t, &cerr), cerr)
	C.sett_txn_free(t.t)
	t.t = nil
	return err
}

// ReadTs is the version the transaction reads at: it sees every write with
// a version at or below it and none above (0 once committed or discarded).
func (t *Txn) ReadTs() uint64 {
	if t.t == nil {
		return 0
	}
	return uint64(C.sett_txn_read_ts(t.t))
}

// Discard drops the buffered writes and frees the transaction; safe to call
// twice and after Commit.
func (t *Txn) Discard() {
	if t.t != nil {
		C.sett_txn_discard(t.t)
		C.sett_txn_free(t.t)
		t.t = nil
	}
}
