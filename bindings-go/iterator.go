package sett

/*
#include <stdlib.h>
#include <sett.h>

// What sett_go_iter_open opens an iterator on.
enum {
	SETT_GO_ITER_DB = 0,
	SETT_GO_ITER_KEYSPACE = 1,
	SETT_GO_ITER_TXN = 2,
	SETT_GO_ITER_TXN_IN = 3,
};

// Builds the options, opens the iterator and frees the options in one cgo
// call: made one C call each, a short prefix scan crossed into C eight times
// before its first batch. `handle` is a sett_db_t, sett_keyspace_t or
// sett_txn_t by `target`; `ks` is the keyspace of SETT_GO_ITER_TXN_IN.
static int sett_go_iter_open(int target, void *handle, sett_keyspace_t *ks,
		const uint8_t *prefix, size_t prefix_len,
		const uint8_t *start, size_t start_len, const uint8_t *end, size_t end_len,
		uint32_t reverse, uint32_t keys_only, uint32_t prefetch,
		sett_iter_t **it, sett_error_t **err) {
	sett_iter_options_t *o = sett_iter_options_new();
	int rc = sett_iter_options_set_prefix(o, prefix, prefix_len);
	if (rc == SETT_OK)
		rc = sett_iter_options_set_bounds(o, start, start_len, end, end_len);
	if (rc == SETT_OK)
		rc = sett_iter_options_set_reverse(o, reverse);
	if (rc == SETT_OK)
		rc = sett_iter_options_set_keys_only(o, keys_only);
	if (rc == SETT_OK && prefetch > 0)
		rc = sett_iter_options_set_prefetch(o, prefetch);
	if (rc == SETT_OK) {
		switch (target) {
		case SETT_GO_ITER_DB:
			rc = sett_iter_new((sett_db_t *)handle, o, it, err);
			break;
		case SETT_GO_ITER_KEYSPACE:
			rc = sett_keyspace_iter_new((sett_keyspace_t *)handle, o, it, err);
			break;
		case SETT_GO_ITER_TXN:
			rc = sett_txn_iter_new((sett_txn_t *)handle, o, it, err);
			break;
		default:
			rc = sett_txn_iter_new_in((sett_txn_t *)handle, ks, o, it, err);
			break;
		}
	}
	sett_iter_options_free(o);
	return rc;
}
*/
import "C"

import (
	"runtime"
	"sync"
	"unsafe"
)

// IteratorOptions says what an iterator walks. The zero value walks every key
// forward with values.
type IteratorOptions struct {
	// Prefix: only keys starting with it.
	Prefix []byte
	// Start (inclusive) and End (exclusive) bound the keys; empty leaves that
	// side open.
	Start, End []byte
	// Reverse walks from the largest key down.
	Reverse bool
	// KeysOnly never reads the value log; Value is then empty.
	KeysOnly bool
	// PrefetchSize: how many items ahead values are read from the value log
	// (0 keeps sett's default, or Limit when that is smaller).
	PrefetchSize int
	// Limit: at most this many entries from the start, and again after each
	// Seek or Rewind (0: no limit). A caller that knows how many it wants
	// (a short prefix scan) saves the fetch that would find the end, and sett
	// reads no values ahead past the limit.
	Limit int
}

// Iterator walks a snapshot taken when it was made, fetching many entries per
// cgo call (sett_iter_next_view). Key and Value point into the C iterator's
// own buffers, without a copy, and are valid until the next call that moves
// or closes the iterator (copy them to keep them): after Close they point to
// freed memory. One goroutine at a time; Close it.
//
//	for ; it.Valid(); it.Next() { use(it.Key(), it.Value()) }
//	if err := it.Err(); err != nil { ... }
type Iterator struct {
	it      *C.sett_iter_t
	views   []C.sett_entry_view_t
	entries [][2][]byte
	pos     int
	done    bool
	err     error
	// limit is IteratorOptions.Limit (0: none); left counts down from it.
	limit, left int
	// bufs is the pair taken from iterBufPool, returned at Close.
	bufs *iterBufs
}

// iterBufs is an iterator's view array and entry slice. A short scan
// (KVBench's 10-key Prefix) would otherwise make and drop them per iterator,
// for the Go collector to reclaim: closed iterators hand theirs to the next
// one instead.
//
// The views are C memory: cgo checks every Go memory argument for Go
// pointers, and a view array in Go memory, whose elements hold pointers,
// would be walked element by element at every fetch. The finalizer frees
// them when the pool drops the pair.
type iterBufs struct {
	views   []C.sett_entry_view_t
	entries [][2][]byte
}

var iterBufPool = sync.Pool{New: func() any {
	// C.malloc does not return NULL: cgo makes it crash on exhaustion.
	p := C.malloc(C.size_t(iterMaxViews * unsafe.Sizeof(C.sett_entry_view_t{})))
	b := &iterBufs{
		views:   unsafe.Slice((*C.sett_entry_view_t)(p), iterMaxViews),
		entries: make([][2][]byte, 0, iterFirstViews),
	}
	runtime.SetFinalizer(b, func(b *iterBufs) { C.free(unsafe.Pointer(unsafe.SliceData(b.views))) })
	return b
}}

// Iterators start with room for a short scan's entries and move to the
// largest view array after their first full batch.
const (
	iterFirstViews = 16
	iterMaxViews   = 256
	// iterDefaultPrefetch is sett's default PrefetchSize.
	iterDefaultPrefetch = 256
)

// iterFirstBytes is the Go memory an iterator takes from iterBufPool: its
// first entry slice (the views are C memory).
var iterFirstBytes = iterFirstViews * int(unsafe.Sizeof([2][]byte{}))

// The kinds of iterTarget, for the files whose preamble does not declare them.
const (
	iterOnDB       = C.SETT_GO_ITER_DB
	iterOnKeyspace = C.SETT_GO_ITER_KEYSPACE
	iterOnTxnIn    = C.SETT_GO_ITER_TXN_IN
)

// iterTarget is what openIterator opens an iterator on: a handle of the
// kind sett_go_iter_open's `target` names.
type iterTarget struct {
	kind   C.int
	handle unsafe.Pointer
	ks     *C.sett_keyspace_t
}

// openIterator makes an iterator on what target returns, called between lock
// and unlock, in one cgo call (sett_go_iter_open).
func openIterator(o IteratorOptions, lock func() error, unlock func(), target func() iterTarget) (*Iterator, error) {
	if o.PrefetchSize < 0 {
		return nil, argError(C.SETT_INVALID_ARGUMENT, "negative PrefetchSize %d", o.PrefetchSize)
	}
	if o.Limit < 0 {
		return nil, argError(C.SETT_INVALID_ARGUMENT, "negative Limit %d", o.Limit)
	}
	prefetch := 0
	if o.PrefetchSize > 0 {
		prefetch = min(o.PrefetchSize, 1<<31)
	} else if o.Limit > 0 && o.Limit < iterDefaultPrefetch {
		prefetch = o.Limit
	}
	if err := lock(); err != nil {
		return nil, err
	}
	t := target()
	var it *C.sett_iter_t
	var cerr *C.sett_error_t
	rc := C.sett_go_iter_open(t.kind, t.handle, t.ks,
		ptr(o.Prefix), C.size_t(len(o.Prefix)),
		ptr(o.Start), C.size_t(len(o.Start)), ptr(o.End), C.size_t(len(o.End)),
		cbool(o.Reverse), cbool(o.KeysOnly), C.uint32_t(prefetch), &it, &cerr)
	unlock()
	runtime.KeepAlive(o.Prefix)
	runtime.KeepAlive(o.Start)
	runtime.KeepAlive(o.End)
	if err := status(rc, cerr); err != nil {
		return nil, err
	}
	return newIterator(it, o.Limit), nil
}

// NewIterator starts an iterator over a snapshot of the database taken now,
// positioned on the first entry.
func (d *DB) NewIterator(o IteratorOptions) (*Iterator, error) {
	return storeNewIterator(d, o)
}

// NewIterator iterates the transaction's view: its snapshot plus its own
// writes.
func (t *Txn) NewIterator(o IteratorOptions) (*Iterator, error) {
	if t.t == nil {
		return nil, ErrClosed
	}
	return openIterator(o, func() error { return nil }, func() {}, func() iterTarget {
		return iterTarget{kind: C.SETT_GO_ITER_TXN, handle: unsafe.Pointer(t.t)}
	})
}

func newIterator(it *C.sett_iter_t, limit int) *Iterator {
	bufs := iterBufPool.Get().(*iterBufs)
	i := &Iterator{
		it:      it,
		views:   bufs.views[:iterFirstViews],
		entries: bufs.entries[:0],
		limit:   limit,
		left:    limit,
		bufs:    bufs,
	}
	i.fill()
	return i
}

// fill fetches the next entries: views of the C iterator's buffers, valid
// until the next fill.
func (i *Iterator) fill() {
	i.entries = i.entries[:0]
	i.pos = 0
	if i.it == nil || i.done {
		return
	}
	want := len(i.views)
	if i.limit > 0 {
		// The limit reached ends the walk without another call.
		want = min(want, i.left)
	}
	var count C.size_t
	var cerr *C.sett_error_t
	rc := C.sett_iter_next_view(i.it, &i.views[0], C.size_t(want), &count, &cerr)
	if err := status(rc, cerr); err != nil {
		i.err = err
		i.done = true
		return
	}
	if count == 0 {
		i.done = true
		return
	}
	for _, v := range i.views[:count] {
		i.entries = append(i.entries, [2][]byte{lent(v.key, v.key_len), lent(v.value, v.value_len)})
	}
	if i.limit > 0 {
		i.left -= int(count)
		i.done = i.left == 0
	}
	if int(count) == len(i.views) && len(i.views) < iterMaxViews && !i.done {
		// A long walk: the next calls lend as many as sett reads ahead.
		i.views = i.bufs.views
	}
}

// lent is the n bytes at p, in C memory, as a slice (empty when n is 0:
// then p is NULL).
func lent(p *C.uint8_t, n C.size_t) []byte {
	if n == 0 {
		return []byte{}
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(p)), int(n))
}

// Valid reports whether the iterator is on an entry.
func (i *Iterator) Valid() bool { return i.pos < len(i.entries) }

// Key is the current key (valid until the iterator moves or is closed).
func (i *Iterator) Key() []byte { return i.entries[i.pos][0] }

// Value is the current value (valid until the iterator moves or is closed;
// empty when KeysOnly).
func (i *Iterator) Value() []byte { return i.entries[i.pos][1] }

// KeyCopy appends the current key to dst and returns it.
func (i *Iterator) KeyCopy(dst []byte) []byte { return append(dst[:0], i.Key()...) }

// ValueCopy appends the current value to dst and returns it.
func (i *Iterator) ValueCopy(dst []byte) []byte { return append(dst[:0], i.Value()...) }

// Next moves to the next entry.
func (i *Iterator) Next() {
	i.pos++
	if i.pos >= len(i.entries) {
		i.fill()
	}
}

// Seek moves to the first key >= key (reverse: the last key <= key) within the
// bounds.
func (i *Iterator) Seek(key []byte) error {
	if i.it == nil {
		return ErrClosed
	}
	var cerr *C.sett_error_t
	rc := C.sett_iter_seek(i.it, ptr(key), C.size_t(len(key)), &cerr)
	runtime.KeepAlive(key)
	return i.restart(status(rc, cerr))
}

// Rewind moves back to the first entry (reverse: the last).
func (i *Iterator) Rewind() error {
	if i.it == nil {
		return ErrClosed
	}
	var cerr *C.sett_error_t
	return i.restart(status(C.sett_iter_rewind(i.it, &cerr), cerr))
}

func (i *Iterator) restart(err error) error {
	if err != nil {
		i.entries = i.entries[:0]
		i.pos = 0
		i.err = err
		i.done = true
		return err
	}
	i.done = false
	i.err = nil
	i.left = i.limit
	i.fill()
	return i.err
}

// Err is the error that ended the iteration early, if any (ErrClosed when the
// database was closed under it).
func (i *Iterator) Err() error { return i.err }

// Close frees the iterator; safe to call twice.
func (i *Iterator) Close() {
	if i.it != nil {
		C.sett_iter_free(i.it)
		i.it = nil
	}
	i.entries = nil
	i.views = nil
	if i.bufs != nil {
		iterBufPool.Put(i.bufs)
		i.bufs = nil
	}
}
