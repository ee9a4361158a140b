// Package sett is the Go binding of sett, an embedded key-value store (an LSM
// tree with a value log), over its C ABI (libsett).
//
// Build libsett first (`make lib` at the repository root); cgo links
// target/release/libsett.so and records its path.
//
// A DB may be used from many goroutines. Txn, Iterator and Batch values are
// for one goroutine at a time.
package sett

/*
#cgo CFLAGS: -I${SRCDIR}/../../include
#cgo LDFLAGS: -L${SRCDIR}/../../target/release -Wl,-rpath,${SRCDIR}/../../target/release -lsett
#include <stdlib.h>
#include "sett.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"sync"
	"time"
	"unsafe"
)

// Error is an error returned by sett, with its status code.
type Error struct {
	Code    int
	Message string
}

func (e *Error) Error() string { return "sett: " + e.Message }

// Is lets errors.Is match an *Error against the sentinels by code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Sentinel errors; compare with errors.Is.
var (
	ErrNotFound        = &Error{Code: int(C.SETT_NOT_FOUND), Message: "key not found"}
	ErrConflict        = &Error{Code: int(C.SETT_CONFLICT), Message: "transaction conflict"}
	ErrClosed          = &Error{Code: int(C.SETT_CLOSED), Message: "closed"}
	ErrInvalidArgument = &Error{Code: int(C.SETT_INVALID_ARGUMENT), Message: "invalid argument"}
	ErrCorruption      = &Error{Code: int(C.SETT_CORRUPTION), Message: "corruption"}
	ErrTooBig          = &Error{Code: int(C.SETT_TOO_BIG), Message: "too big"}
	ErrLocked          = &Error{Code: int(C.SETT_LOCKED), Message: "locked by another process"}
)

// status turns a C status and error into a Go error (nil for SETT_OK).
func status(rc C.int, cerr *C.sett_error_t) error {
	if rc == C.SETT_OK {
		return nil
	}
	if rc == C.SETT_NOT_FOUND {
		return ErrNotFound
	}
	msg := C.GoString(C.sett_status_string(rc))
	if cerr != nil {
		msg = C.GoString(C.sett_error_message(cerr))
		C.sett_error_free(cerr)
	}
	return &Error{Code: int(rc), Message: msg}
}

// ptr returns a C pointer to the first byte of b (nil for an empty slice).
func ptr(b []byte) *C.uint8_t {
	if len(b) == 0 {
		return nil
	}
	return (*C.uint8_t)(unsafe.Pointer(&b[0]))
}

// Options of Open. Zero fields keep sett's defaults.
type Options struct {
	ValueThreshold int
	MemtableSize   int
	SyncWrites     bool
	ReadOnly       bool
	MaxValueSize   int
}

// DB is an open database.
type DB struct {
	mu sync.RWMutex
	db *C.sett_db_t
}

// Version is the version number of the loaded libsett (MAJOR*10000+MINOR*100+PATCH).
func Version() int { return int(C.sett_version_number()) }

// headerVersion is the version of the sett.h this package was compiled against.
func headerVersion() int { return int(C.SETT_VERSION_NUMBER) }

// Open opens or creates the database in dir. opts may be nil.
func Open(dir string, opts *Options) (*DB, error) {
	co := C.sett_options_new()
	defer C.sett_options_free(co)
	if opts != nil {
		if opts.ValueThreshold > 0 {
			C.sett_options_set_value_threshold(co, C.size_t(opts.ValueThreshold))
		}
		if opts.MemtableSize > 0 {
			C.sett_options_set_memtable_size(co, C.size_t(opts.MemtableSize))
		}
		if opts.MaxValueSize > 0 {
			C.sett_options_set_max_value_size(co, C.size_t(opts.MaxValueSize))
		}
		if opts.SyncWrites {
			C.sett_options_set_sync_writes(co, 1)
		}
		if opts.ReadOnly {
			C.sett_options_set_read_only(co, 1)
		}
	}
	cdir := C.CString(dir)
	defer C.free(unsafe.Pointer(cdir))
	var db *C.sett_db_t
	var cerr *C.sett_error_t
	if err := status(C.sett_open(cdir, co, &db, &cerr), cerr); err != nil {
		return nil, err
	}
	return &DB{db: db}, nil
}

// Close flushes and closes the database. Later calls return ErrClosed.
func (d *DB) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.db == nil {
		return nil
	}
	var cerr *C.sett_error_t
	err := status(C.sett_close(d.db, &cerr), cerr)
	C.sett_db_free(d.db)
	d.db = nil
	return err
}

// handle returns the C handle under a read lock; the caller must call d.mu.RUnlock.
func (d *DB) handle() (*C.sett_db_t, error) {
	d.mu.RLock()
	if d.db == nil {
		d.mu.RUnlock()
		return nil, ErrClosed
	}
	return d.db, nil
}

// Set stores key → value.
func (d *DB) Set(key, value []byte) error {
	return d.SetEntry(key, value, 0, 0)
}

// SetEntry stores key → value with a user-meta byte and a time to live (0 = none).
func (d *DB) SetEntry(key, value []byte, meta byte, ttl time.Duration) error {
	h, err := d.handle()
	if err != nil {
		return err
	}
	defer d.mu.RUnlock()
	var cerr *C.sett_error_t
	rc := C.sett_put_with(h, ptr(key), C.size_t(len(key)), ptr(value), C.size_t(len(value)),
		C.uint8_t(meta), C.uint64_t(ttl.Milliseconds()), &cerr)
	runtime.KeepAlive(key)
	runtime.KeepAlive(value)
	return status(rc, cerr)
}

// Delete removes key.
func (d *DB) Delete(key []byte) error {
	h, err := d.handle()
	if err != nil {
		return err
	}
	defer d.mu.RUnlock()
	var cerr *C.sett_error_t
	rc := C.sett_delete(h, ptr(key), C.size_t(len(key)), &cerr)
	runtime.KeepAlive(key)
	return status(rc, cerr)
}

// Get returns a copy of key's value, or ErrNotFound.
func (d *DB) Get(key []byte) ([]byte, error) {
	return d.GetInto(key, nil)
}

// GetInto reads key's value into dst's spare capacity when it fits (no
// allocation), growing it otherwise, and returns the value. ErrNotFound if absent.
func (d *DB) GetInto(key, dst []byte) ([]byte, error) {
	h, err := d.handle()
	if err != nil {
		return nil, err
	}
	defer d.mu.RUnlock()
	dst = dst[:cap(dst)]
	for {
		var n C.size_t
		var cerr *C.sett_error_t
		rc := C.sett_get_into(h, ptr(key), C.size_t(len(key)), ptr(dst), C.size_t(len(dst)), &n, &cerr)
		runtime.KeepAlive(key)
		runtime.KeepAlive(dst)
		if rc == C.SETT_BUFFER_TOO_SMALL {
			C.sett_error_free(cerr)
			dst = make([]byte, int(n))
			continue
		}
		if err := status(rc, cerr); err != nil {
			return nil, err
		}
		if dst == nil {
			return []byte{}, nil
		}
		return dst[:int(n)], nil
	}
}

// MultiGet reads many keys in one call at one consistent point; a missing key
// gives a nil value.
func (d *DB) MultiGet(keys [][]byte) ([][]byte, error) {
	h, err := d.handle()
	if err != nil {
		return nil, err
	}
	defer d.mu.RUnlock()
	n := len(keys)
	if n == 0 {
		return nil, nil
	}
	// The key pointer array lives in C memory (C may not hold Go pointers to Go
	// memory); it is typed uintptr so that storing into it is not a Go pointer
	// write (no write barrier on C memory). The keys themselves are pinned.
	cptrs := unsafe.Slice((*uintptr)(C.malloc(C.size_t(n)*C.size_t(unsafe.Sizeof(uintptr(0))))), n)
	clens := unsafe.Slice((*C.size_t)(C.malloc(C.size_t(n)*C.size_t(unsafe.Sizeof(C.size_t(0))))), n)
	defer C.free(unsafe.Pointer(&cptrs[0]))
	defer C.free(unsafe.Pointer(&clens[0]))
	var pinner runtime.Pinner
	defer pinner.Unpin()
	for i, k := range keys {
		cptrs[i] = 0
		if len(k) > 0 {
			pinner.Pin(&k[0])
			cptrs[i] = uintptr(unsafe.Pointer(&k[0]))
		}
		clens[i] = C.size_t(len(k))
	}
	vals := make([]C.sett_buf_t, n)
	st := make([]C.int, n)
	var cerr *C.sett_error_t
	rc := C.sett_multi_get(h, (**C.uint8_t)(unsafe.Pointer(&cptrs[0])), &clens[0], C.size_t(n), &vals[0], &st[0], &cerr)
	if err := status(rc, cerr); err != nil {
		return nil, err
	}
	out := make([][]byte, n)
	for i := range vals {
		if st[i] == C.SETT_OK {
			out[i] = C.GoBytes(unsafe.Pointer(vals[i].data), C.int(vals[i].len))
		}
		C.sett_buf_free(&vals[i])
	}
	return out, nil
}

// Flush makes every write durable (the memtables become tables).
func (d *DB) Flush() error {
	h, err := d.handle()
	if err != nil {
		return err
	}
	defer d.mu.RUnlock()
	var cerr *C.sett_error_t
	return status(C.sett_flush(h, &cerr), cerr)
}

// Stats are counts and sizes of a database (sett_stats_t).
type Stats struct {
	// Tables and bytes per level, L0 first.
	LevelTables, LevelBytes []uint64
	VlogFiles, VlogBytes    uint64
	MemtableBytes           uint64
	// Memtables waiting to be flushed.
	ImmutableMemtables uint64
	IndexFilterBytes   uint64
	LastSeq            uint64
	TableEntries       uint64
	WriteGroups        uint64
	BatchesWritten     uint64
	// Levels due for compaction and compactions in progress: the background
	// work has settled when both are 0 and ImmutableMemtables is 0.
	CompactionsPending uint64
	CompactionsRunning uint64
}

// Stats returns the database's counts and sizes.
func (d *DB) Stats() (Stats, error) {
	h, err := d.handle()
	if err != nil {
		return Stats{}, err
	}
	defer d.mu.RUnlock()
	var cs C.sett_stats_t
	var cerr *C.sett_error_t
	if err := status(C.sett_stats(h, &cs, &cerr), cerr); err != nil {
		return Stats{}, err
	}
	n := int(cs.num_levels)
	st := Stats{
		LevelTables:        make([]uint64, n),
		LevelBytes:         make([]uint64, n),
		VlogFiles:          uint64(cs.vlog_files),
		VlogBytes:          uint64(cs.vlog_bytes),
		MemtableBytes:      uint64(cs.memtable_bytes),
		ImmutableMemtables: uint64(cs.immutable_memtables),
		IndexFilterBytes:   uint64(cs.index_filter_bytes),
		LastSeq:            uint64(cs.last_seq),
		TableEntries:       uint64(cs.table_entries),
		WriteGroups:        uint64(cs.write_groups),
		BatchesWritten:     uint64(cs.batches_written),
		CompactionsPending: uint64(cs.compactions_pending),
		CompactionsRunning: uint64(cs.compactions_running),
	}
	for i := 0; i < n; i++ {
		st.LevelTables[i] = uint64(cs.level_tables[i])
		st.LevelBytes[i] = uint64(cs.level_bytes[i])
	}
	return st, nil
}

// DropAll deletes every key.
func (d *DB) DropAll() error {
	h, err := d.handle()
	if err != nil {
		return err
	}
	defer d.mu.RUnlock()
	var cerr *C.sett_error_t
	return status(C.sett_drop_all(h, &cerr), cerr)
}

// Batch collects writes applied atomically by Commit.
type Batch struct {
	db *DB
	b  *C.sett_batch_t
}

// NewBatch starts a batch. Commit or Discard it.
func (d *DB) NewBatch() *Batch {
	return &Batch{db: d, b: C.sett_batch_new()}
}

// Set adds a put.
func (b *Batch) Set(key, value []byte) error {
	if b.b == nil {
		return ErrClosed
	}
	rc := C.sett_batch_put(b.b, ptr(key), C.size_t(len(key)), ptr(value), C.size_t(len(value)))
	runtime.KeepAlive(key)
	runtime.KeepAlive(value)
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

// Len is the number of operations in the batch.
func (b *Batch) Len() int {
	if b.b == nil {
		return 0
	}
	return int(C.sett_batch_count(b.b))
}

// Commit applies the batch atomically and frees it.
func (b *Batch) Commit() error {
	if b.b == nil {
		return ErrClosed
	}
	defer b.Discard()
	h, err := b.db.handle()
	if err != nil {
		return err
	}
	defer b.db.mu.RUnlock()
	var cerr *C.sett_error_t
	return status(C.sett_write(h, b.b, &cerr), cerr)
}

// Discard frees the batch without applying it.
func (b *Batch) Discard() {
	if b.b != nil {
		C.sett_batch_free(b.b)
		b.b = nil
	}
}

// Txn is a transaction.
type Txn struct {
	t *C.sett_txn_t
}

func (d *DB) begin(update bool) (*Txn, error) {
	h, err := d.handle()
	if err != nil {
		return nil, err
	}
	defer d.mu.RUnlock()
	var u C.uint32_t
	if update {
		u = 1
	}
	var t *C.sett_txn_t
	var cerr *C.sett_error_t
	if err := status(C.sett_txn_begin(h, u, &t, &cerr), cerr); err != nil {
		return nil, err
	}
	return &Txn{t: t}, nil
}

// Update runs fn in a read-write transaction and commits it. A conflict is
// returned as ErrConflict (retry by calling Update again), as Badger does.
func (d *DB) Update(fn func(txn *Txn) error) error {
	txn, err := d.begin(true)
	if err != nil {
		return err
	}
	defer txn.Discard()
	if err := fn(txn); err != nil {
		return err
	}
	return txn.Commit()
}

// View runs fn in a read-only transaction (a stable snapshot).
func (d *DB) View(fn func(txn *Txn) error) error {
	txn, err := d.begin(false)
	if err != nil {
		return err
	}
	defer txn.Discard()
	return fn(txn)
}

// Get returns a copy of key's value as the transaction sees it, or ErrNotFound.
func (t *Txn) Get(key []byte) ([]byte, error) {
	if t.t == nil {
		return nil, ErrClosed
	}
	var buf C.sett_buf_t
	var cerr *C.sett_error_t
	rc := C.sett_txn_get(t.t, ptr(key), C.size_t(len(key)), &buf, &cerr)
	runtime.KeepAlive(key)
	if err := status(rc, cerr); err != nil {
		return nil, err
	}
	v := C.GoBytes(unsafe.Pointer(buf.data), C.int(buf.len))
	C.sett_buf_free(&buf)
	return v, nil
}

// Set buffers a put.
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

// Commit applies the transaction; ErrConflict if it must be retried.
func (t *Txn) Commit() error {
	if t.t == nil {
		return ErrClosed
	}
	var cerr *C.sett_error_t
	return status(C.sett_txn_commit(t.t, &cerr), cerr)
}

// Discard drops the transaction; safe to call twice.
func (t *Txn) Discard() {
	if t.t != nil {
		C.sett_txn_free(t.t)
		t.t = nil
	}
}

// IteratorOptions says what an iterator walks.
type IteratorOptions struct {
	Prefix   []byte
	Start    []byte // inclusive
	End      []byte // exclusive
	Reverse  bool
	KeysOnly bool
}

// Iterator walks a snapshot, fetching many items per cgo call. Key and Value
// are valid until the next call to Next (copy them to keep them).
type Iterator struct {
	it      *C.sett_iter_t
	buf     []byte
	entries [][2][]byte
	pos     int
	done    bool
	err     error
}

// Iterators start with a small batch buffer (a prefix scan of ten keys should
// not allocate 256 KiB) and double it while batches come back full.
const (
	iterFirstBytes = 4 << 10
	iterMaxBytes   = 256 << 10
)

func newIterOptions(o IteratorOptions) *C.sett_iter_options_t {
	co := C.sett_iter_options_new()
	C.sett_iter_options_set_prefix(co, ptr(o.Prefix), C.size_t(len(o.Prefix)))
	C.sett_iter_options_set_bounds(co, ptr(o.Start), C.size_t(len(o.Start)), ptr(o.End), C.size_t(len(o.End)))
	if o.Reverse {
		C.sett_iter_options_set_reverse(co, 1)
	}
	if o.KeysOnly {
		C.sett_iter_options_set_keys_only(co, 1)
	}
	runtime.KeepAlive(o)
	return co
}

// NewIterator starts an iterator on the first entry. Close it.
func (d *DB) NewIterator(o IteratorOptions) (*Iterator, error) {
	h, err := d.handle()
	if err != nil {
		return nil, err
	}
	defer d.mu.RUnlock()
	co := newIterOptions(o)
	defer C.sett_iter_options_free(co)
	var it *C.sett_iter_t
	var cerr *C.sett_error_t
	if err := status(C.sett_iter_new(h, co, &it, &cerr), cerr); err != nil {
		return nil, err
	}
	i := &Iterator{it: it, buf: make([]byte, iterFirstBytes)}
	i.fill()
	return i, nil
}

// NewIterator iterates the transaction's view.
func (t *Txn) NewIterator(o IteratorOptions) (*Iterator, error) {
	if t.t == nil {
		return nil, ErrClosed
	}
	co := newIterOptions(o)
	defer C.sett_iter_options_free(co)
	var it *C.sett_iter_t
	var cerr *C.sett_error_t
	if err := status(C.sett_txn_iter_new(t.t, co, &it, &cerr), cerr); err != nil {
		return nil, err
	}
	i := &Iterator{it: it, buf: make([]byte, iterFirstBytes)}
	i.fill()
	return i, nil
}

// fill fetches the next batch of entries into buf.
func (i *Iterator) fill() {
	i.entries = i.entries[:0]
	i.pos = 0
	if i.it == nil || i.done {
		return
	}
	for {
		var count, used C.size_t
		var cerr *C.sett_error_t
		rc := C.sett_iter_next_batch(i.it, ptr(i.buf), C.size_t(len(i.buf)), &count, &used, &cerr)
		runtime.KeepAlive(i.buf)
		if rc == C.SETT_BUFFER_TOO_SMALL {
			C.sett_error_free(cerr)
			i.buf = make([]byte, int(used)*2)
			continue
		}
		if err := status(rc, cerr); err != nil {
			i.err = err
			i.done = true
			return
		}
		if count == 0 {
			i.done = true
			return
		}
		if int(used)*2 > len(i.buf) && len(i.buf) < iterMaxBytes {
			defer func() { i.buf = make([]byte, min(len(i.buf)*2, iterMaxBytes)) }()
		}
		at := 0
		for n := 0; n < int(count); n++ {
			kl := int(uint32(i.buf[at]) | uint32(i.buf[at+1])<<8 | uint32(i.buf[at+2])<<16 | uint32(i.buf[at+3])<<24)
			vl := int(uint32(i.buf[at+4]) | uint32(i.buf[at+5])<<8 | uint32(i.buf[at+6])<<16 | uint32(i.buf[at+7])<<24)
			k := i.buf[at+8 : at+8+kl : at+8+kl]
			v := i.buf[at+8+kl : at+8+kl+vl : at+8+kl+vl]
			i.entries = append(i.entries, [2][]byte{k, v})
			at += 8 + kl + vl
		}
		return
	}
}

// Valid reports whether the iterator is on an entry.
func (i *Iterator) Valid() bool { return i.pos < len(i.entries) }

// Key is the current key (valid until Next).
func (i *Iterator) Key() []byte { return i.entries[i.pos][0] }

// Value is the current value (valid until Next; empty when KeysOnly).
func (i *Iterator) Value() []byte { return i.entries[i.pos][1] }

// Next moves to the next entry.
func (i *Iterator) Next() {
	i.pos++
	if i.pos >= len(i.entries) {
		i.fill()
	}
}

// Seek moves to the first key >= key (reverse: the last key <= key).
func (i *Iterator) Seek(key []byte) error {
	if i.it == nil {
		return ErrClosed
	}
	var cerr *C.sett_error_t
	rc := C.sett_iter_seek(i.it, ptr(key), C.size_t(len(key)), &cerr)
	runtime.KeepAlive(key)
	if err := status(rc, cerr); err != nil {
		return err
	}
	i.done = false
	i.err = nil
	i.fill()
	return i.err
}

// Rewind moves back to the first entry.
func (i *Iterator) Rewind() error {
	if i.it == nil {
		return ErrClosed
	}
	var cerr *C.sett_error_t
	if err := status(C.sett_iter_rewind(i.it, &cerr), cerr); err != nil {
		return err
	}
	i.done = false
	i.err = nil
	i.fill()
	return i.err
}

// Err is the error that ended the iteration early, if any.
func (i *Iterator) Err() error { return i.err }

// Close frees the iterator; safe to call twice.
func (i *Iterator) Close() {
	if i.it != nil {
		C.sett_iter_free(i.it)
		i.it = nil
	}
	i.entries = nil
}

// String describes the error for fmt.
func (e *Error) String() string { return fmt.Sprintf("sett error %d: %s", e.Code, e.Message) }
