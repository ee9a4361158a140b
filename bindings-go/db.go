package sett

/*
#cgo pkg-config: sett
#include <stdlib.h>
#include <sett.h>
*/
import "C"

import (
	"runtime"
	"sync"
	"time"
	"unsafe"
)

// DB is an open database. It may be used from many goroutines at once.
type DB struct {
	// mu guards db: calls hold it shared for the length of their C call, so
	// that Close (exclusive) never frees the handle under one.
	mu sync.RWMutex
	db *C.sett_db_t
}

// Version is the version number of the loaded libsett:
// MAJOR*10000 + MINOR*100 + PATCH.
func Version() int { return int(C.sett_version_number()) }

// VersionString is the version of the loaded libsett, such as "0.1.0".
func VersionString() string { return C.GoString(C.sett_version_string()) }

// HeaderVersion is the version of the sett.h this package was compiled
// against; it differs from Version when the libsett found at run time is not
// the one built against.
func HeaderVersion() int { return int(C.SETT_VERSION_NUMBER) }

// Open opens or creates the database in directory dir. opts may be nil for
// the defaults. A directory held by another read-write process gives
// ErrLocked.
func Open(dir string, opts *Options) (*DB, error) {
	co, err := opts.cOptions()
	if err != nil {
		return nil, err
	}
	defer C.sett_options_free(co)
	cdir := C.CString(dir)
	defer C.free(unsafe.Pointer(cdir))
	var db *C.sett_db_t
	var cerr *C.sett_error_t
	if err := status(C.sett_open(cdir, co, &db, &cerr), cerr); err != nil {
		return nil, err
	}
	return &DB{db: db}, nil
}

// Close flushes and closes the database and releases its directory. It waits
// for the calls in flight; later calls return ErrClosed. Closing twice is
// allowed.
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

// handle returns the C handle under the read lock; the caller must call
// d.mu.RUnlock once its C call has returned.
func (d *DB) handle() (*C.sett_db_t, error) {
	d.mu.RLock()
	if d.db == nil {
		d.mu.RUnlock()
		return nil, ErrClosed
	}
	return d.db, nil
}

// ptr returns a C pointer to the first byte of b (nil for an empty slice).
// cgo pins b for the length of the call it is passed to.
func ptr(b []byte) *C.uint8_t {
	if len(b) == 0 {
		return nil
	}
	return (*C.uint8_t)(unsafe.Pointer(&b[0]))
}

// Entry is a write with its metadata, as Badger's: build it with NewEntry and
// WithMeta / WithTTL, store it with DB.SetEntry, Txn.SetEntry or
// Batch.SetEntry.
type Entry struct {
	Key   []byte
	Value []byte
	// UserMeta is a byte stored with the value, returned by GetItem.
	UserMeta byte
	// TTL is how long the entry lives (0 = for ever); sett rounds it up to
	// whole seconds.
	TTL time.Duration
}

// NewEntry is an Entry for key → value without metadata.
func NewEntry(key, value []byte) *Entry { return &Entry{Key: key, Value: value} }

// WithMeta sets the user-meta byte and returns e.
func (e *Entry) WithMeta(meta byte) *Entry { e.UserMeta = meta; return e }

// WithTTL sets the time to live and returns e.
func (e *Entry) WithTTL(ttl time.Duration) *Entry { e.TTL = ttl; return e }

// ttlMillis is the TTL in milliseconds for C, rounded up; a negative TTL is
// an invalid argument.
func (e *Entry) ttlMillis() (C.uint64_t, error) {
	if e.TTL < 0 {
		return 0, argError(C.SETT_INVALID_ARGUMENT, "negative TTL %v", e.TTL)
	}
	return C.uint64_t((e.TTL + time.Millisecond - 1) / time.Millisecond), nil
}

// Item is a value read with its metadata (DB.GetItem).
type Item struct {
	Key   []byte
	Value []byte
	// UserMeta is the byte stored with Entry.UserMeta.
	UserMeta byte
	// ExpiresAt is when the entry expires, in unix seconds (0 = never).
	ExpiresAt uint64
	// Version is the commit version (timestamp) of this value.
	Version uint64
}

// Set stores key → value.
func (d *DB) Set(key, value []byte) error {
	return storeSet(d, key, value)
}

// SetEntry stores e.Key → e.Value with its user-meta byte and TTL.
func (d *DB) SetEntry(e *Entry) error {
	return storeSetEntry(d, e)
}

// Merge merges operand into key with the database's merge operator
// (Options.MergeOperator): one write, without reading the key; reads fold
// the operands onto its value. ErrMergeOperatorMissing when the database has
// none (nothing is written).
func (d *DB) Merge(key, operand []byte) error {
	return storeMerge(d, key, operand)
}

// Delete removes key (no error if it is absent).
func (d *DB) Delete(key []byte) error {
	return storeDelete(d, key)
}

// Get returns a copy of key's value, or ErrNotFound. An empty value is a
// non-nil empty slice.
func (d *DB) Get(key []byte) ([]byte, error) {
	return storeGet(d, key)
}

// takeBuf copies a C buffer into Go memory and frees it.
func takeBuf(buf *C.sett_buf_t) []byte {
	v := make([]byte, int(buf.len))
	if buf.len > 0 {
		copy(v, unsafe.Slice((*byte)(unsafe.Pointer(buf.data)), int(buf.len)))
	}
	C.sett_buf_free(buf)
	return v
}

// GetInto reads key's value into dst's spare capacity when it fits (no
// allocation) and returns dst[:len(value)]; otherwise it allocates a slice of
// the right size and reads again. ErrNotFound if absent.
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

// GetItem reads key with its metadata: user meta, expiry and version.
func (d *DB) GetItem(key []byte) (*Item, error) {
	h, err := d.handle()
	if err != nil {
		return nil, err
	}
	defer d.mu.RUnlock()
	return getEntry(key, func(out *entryOut) C.int {
		return C.sett_get_entry(h, ptr(key), C.size_t(len(key)), &out.buf, &out.meta, &out.expires, &out.version, &out.cerr)
	})
}

// entryOut holds the out-parameters of sett_get_entry and sett_txn_get_entry.
type entryOut struct {
	buf              C.sett_buf_t
	meta             C.uint8_t
	expires, version C.uint64_t
	cerr             *C.sett_error_t
}

// getEntry runs one of the get-entry calls and builds the Item it filled.
func getEntry(key []byte, call func(*entryOut) C.int) (*Item, error) {
	var out entryOut
	rc := call(&out)
	runtime.KeepAlive(key)
	if err := status(rc, out.cerr); err != nil {
		return nil, err
	}
	return &Item{
		Key:       append([]byte(nil), key...),
		Value:     takeBuf(&out.buf),
		UserMeta:  byte(out.meta),
		ExpiresAt: uint64(out.expires),
		Version:   uint64(out.version),
	}, nil
}

// MultiGet reads many keys at one consistent point in one cgo call; a missing
// key gives a nil value. Once a lookup waits on the device, the engine asks
// for the rest of the batch's reads together.
func (d *DB) MultiGet(keys [][]byte) ([][]byte, error) { return storeMultiGet(d, keys) }

// MultiGetFunc is MultiGet without an allocation per call: it calls
// fn(i, value) for each key in the order asked (value nil for a missing
// key), with values lent from a buffer that later calls reuse. fn copies
// what it keeps.
func (d *DB) MultiGetFunc(keys [][]byte, fn func(i int, value []byte)) error {
	return storeMultiGetFunc(d, keys, fn)
}
