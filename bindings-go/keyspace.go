package sett

/*
#include <stdlib.h>
#include <sett.h>
*/
import "C"

import (
	"bytes"
	"context"
	"runtime"
	"sync"
	"time"
	"unsafe"
)

// KeyspaceOptions are a keyspace's own options, recorded when it is created.
// The zero value takes the database's value threshold and compression and no
// default TTL.
type KeyspaceOptions struct {
	// ValueThreshold: values of at least this many bytes written to the
	// keyspace go to the value log (0: the database's Options.ValueThreshold).
	ValueThreshold int
	// DefaultTTL: the TTL of puts to the keyspace that give none (rounded up
	// to whole seconds; 0: none).
	DefaultTTL time.Duration
	// Compression: the codec of every table block holding the keyspace's
	// keys, on every level (zstd at Options.ZSTDCompressionLevel); nil: the
	// database's per-level choice. CompressionZSTD.Ptr() sets one.
	Compression *Compression
}

// Ptr returns a pointer to c, for KeyspaceOptions.Compression.
func (c Compression) Ptr() *Compression {
	return &c
}

// Keyspace is a named, independent ordered map in one database (RocksDB's
// column family, Badger users' key prefixes without the bookkeeping). Batches
// and transactions write into several keyspaces and the default one
// atomically (Batch.SetIn, Txn.SetIn). It may be used from many goroutines at
// once; Close releases the handle (the keyspace and its data stay). After
// DB.DropKeyspace its calls return ErrInvalidArgument; after DB.Close,
// ErrClosed.
type Keyspace struct {
	mu   sync.RWMutex
	ks   *C.sett_keyspace_t
	name string
}

// Keyspace opens keyspace name, creating it with opts if it does not exist.
// opts nil: for an existing keyspace, its recorded options (other options
// replace them); for a new one, the zero KeyspaceOptions.
func (d *DB) Keyspace(name string, opts *KeyspaceOptions) (*Keyspace, error) {
	var co *C.sett_keyspace_options_t
	if opts != nil {
		if opts.ValueThreshold < 0 || opts.DefaultTTL < 0 {
			return nil, argError(C.SETT_INVALID_ARGUMENT, "negative keyspace option %+v", *opts)
		}
		co = C.sett_keyspace_options_new()
		defer C.sett_keyspace_options_free(co)
		C.sett_keyspace_options_set_value_threshold(co, C.size_t(opts.ValueThreshold))
		ms := (opts.DefaultTTL + time.Millisecond - 1) / time.Millisecond
		C.sett_keyspace_options_set_default_ttl(co, C.uint64_t(ms))
		if c := opts.Compression; c != nil {
			if rc := C.sett_keyspace_options_set_compression(co, C.int(*c)); rc != C.SETT_OK {
				return nil, argError(rc, "keyspace compression %d is not a Compression", int(*c))
			}
		}
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	h, err := d.handle()
	if err != nil {
		return nil, err
	}
	defer d.mu.RUnlock()
	var ks *C.sett_keyspace_t
	var cerr *C.sett_error_t
	if err := status(C.sett_keyspace_open(h, cname, co, &ks, &cerr), cerr); err != nil {
		return nil, err
	}
	return &Keyspace{ks: ks, name: name}, nil
}

// Keyspaces lists the names of the database's keyspaces in byte order.
func (d *DB) Keyspaces() ([]string, error) {
	h, err := d.handle()
	if err != nil {
		return nil, err
	}
	defer d.mu.RUnlock()
	var buf C.sett_buf_t
	var n C.size_t
	var cerr *C.sett_error_t
	if err := status(C.sett_keyspace_names(h, &buf, &n, &cerr), cerr); err != nil {
		return nil, err
	}
	raw := takeBuf(&buf)
	names := make([]string, 0, int(n))
	for len(raw) > 0 {
		end := bytes.IndexByte(raw, 0)
		if end < 0 {
			end = len(raw)
		}
		names = append(names, string(raw[:end]))
		raw = raw[min(end+1, len(raw)):]
	}
	return names, nil
}

// DropKeyspace drops keyspace name and all its keys in one atomic write (a
// range tombstone: O(1), writers go on; compaction reclaims the space). Its
// handles fail from then on. ErrNotFound when there is no such keyspace.
func (d *DB) DropKeyspace(name string) error {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	h, err := d.handle()
	if err != nil {
		return err
	}
	defer d.mu.RUnlock()
	var cerr *C.sett_error_t
	return status(C.sett_drop_keyspace(h, cname, &cerr), cerr)
}

// Name is the keyspace's name.
func (k *Keyspace) Name() string { return k.name }

// handle returns the C handle under the read lock; the caller must call
// k.mu.RUnlock once its C call has returned.
func (k *Keyspace) handle() (*C.sett_keyspace_t, error) {
	k.mu.RLock()
	if k.ks == nil {
		k.mu.RUnlock()
		return nil, ErrClosed
	}
	return k.ks, nil
}

// ID is the keyspace's id (its keys are stored under FF FF FF FF + the id,
// big-endian); 0 once closed.
func (k *Keyspace) ID() uint32 {
	h, err := k.handle()
	if err != nil {
		return 0
	}
	defer k.mu.RUnlock()
	return uint32(C.sett_keyspace_id(h))
}

// Compression is the keyspace's codec in force, or nil when it uses the
// database's per-level choice (also once closed).
func (k *Keyspace) Compression() *Compression {
	h, err := k.handle()
	if err != nil {
		return nil
	}
	defer k.mu.RUnlock()
	c := C.sett_keyspace_compression(h)
	if c == C.SETT_COMPRESSION_INHERIT {
		return nil
	}
	return Compression(c).Ptr()
}

// Close releases the handle; the keyspace and its data stay. Safe to call
// twice.
func (k *Keyspace) Close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.ks != nil {
		C.sett_keyspace_close(k.ks)
		k.ks = nil
	}
}

// Get returns a copy of key's value in the keyspace, or ErrNotFound.
func (k *Keyspace) Get(key []byte) ([]byte, error) {
	h, err := k.handle()
	if err != nil {
		return nil, err
	}
	defer k.mu.RUnlock()
	var buf C.sett_buf_t
	var cerr *C.sett_error_t
	rc := C.sett_keyspace_get(h, ptr(key), C.size_t(len(key)), &buf, &cerr)
	runtime.KeepAlive(key)
	if err := status(rc, cerr); err != nil {
		return nil, err
	}
	return takeBuf(&buf), nil
}

// Set stores key → value in the keyspace (with its default TTL, if any).
func (k *Keyspace) Set(key, value []byte) error {
	h, err := k.handle()
	if err != nil {
		return err
	}
	defer k.mu.RUnlock()
	var cerr *C.sett_error_t
	rc := C.sett_keyspace_put(h, ptr(key), C.size_t(len(key)), ptr(value), C.size_t(len(value)), &cerr)
	runtime.KeepAlive(key)
	runtime.KeepAlive(value)
	return status(rc, cerr)
}

// SetEntry stores e.Key → e.Value in the keyspace with its user-meta byte
// and TTL (0: the keyspace's default TTL, if any).
func (k *Keyspace) SetEntry(e *Entry) error {
	ttl, err := e.ttlMillis()
	if err != nil {
		return err
	}
	h, err := k.handle()
	if err != nil {
		return err
	}
	defer k.mu.RUnlock()
	var cerr *C.sett_error_t
	rc := C.sett_keyspace_put_with(h, ptr(e.Key), C.size_t(len(e.Key)), ptr(e.Value), C.size_t(len(e.Value)),
		C.uint8_t(e.UserMeta), ttl, &cerr)
	runtime.KeepAlive(e)
	return status(rc, cerr)
}

// Delete removes key from the keyspace (no error if it is absent).
func (k *Keyspace) Delete(key []byte) error {
	h, err := k.handle()
	if err != nil {
		return err
	}
	defer k.mu.RUnlock()
	var cerr *C.sett_error_t
	rc := C.sett_keyspace_delete(h, ptr(key), C.size_t(len(key)), &cerr)
	runtime.KeepAlive(key)
	return status(rc, cerr)
}

// DeleteRange deletes every key of the keyspace in [start, end) with one
// range tombstone (see DB.DeleteRange); an empty end is the keyspace's end.
func (k *Keyspace) DeleteRange(start, end []byte) error {
	h, err := k.handle()
	if err != nil {
		return err
	}
	defer k.mu.RUnlock()
	var cerr *C.sett_error_t
	rc := C.sett_keyspace_delete_range(h, ptr(start), C.size_t(len(start)), ptr(end), C.size_t(len(end)), &cerr)
	runtime.KeepAlive(start)
	runtime.KeepAlive(end)
	return status(rc, cerr)
}

// NewIterator starts an iterator over a snapshot of the keyspace taken now;
// prefix and bounds are in the keyspace's keys, and keys come back as they
// were set.
func (k *Keyspace) NewIterator(o IteratorOptions) (*Iterator, error) {
	co, err := newIterOptions(o)
	if err != nil {
		return nil, err
	}
	defer C.sett_iter_options_free(co)
	h, err := k.handle()
	if err != nil {
		return nil, err
	}
	var it *C.sett_iter_t
	var cerr *C.sett_error_t
	rc := C.sett_keyspace_iter_new(h, co, &it, &cerr)
	k.mu.RUnlock()
	if err := status(rc, cerr); err != nil {
		return nil, err
	}
	return newIterator(it, o.Limit), nil
}

// SetIn adds a put of key → value in keyspace ks (with its default TTL, if
// any); a batch may write several keyspaces and the default one atomically.
func (b *Batch) SetIn(ks *Keyspace, key, value []byte) error {
	if b.b == nil {
		return ErrClosed
	}
	h, err := ks.handle()
	if err != nil {
		return err
	}
	defer ks.mu.RUnlock()
	rc := C.sett_batch_put_in(b.b, h, ptr(key), C.size_t(len(key)), ptr(value), C.size_t(len(value)))
	runtime.KeepAlive(key)
	runtime.KeepAlive(value)
	return status(rc, nil)
}

// DeleteIn adds a delete of key in keyspace ks.
func (b *Batch) DeleteIn(ks *Keyspace, key []byte) error {
	if b.b == nil {
		return ErrClosed
	}
	h, err := ks.handle()
	if err != nil {
		return err
	}
	defer ks.mu.RUnlock()
	rc := C.sett_batch_delete_in(b.b, h, ptr(key), C.size_t(len(key)))
	runtime.KeepAlive(key)
	return status(rc, nil)
}

// DeleteRangeIn adds a delete of every key of keyspace ks in [start, end)
// (an empty end is the keyspace's end).
func (b *Batch) DeleteRangeIn(ks *Keyspace, start, end []byte) error {
	if b.b == nil {
		return ErrClosed
	}
	h, err := ks.handle()
	if err != nil {
		return err
	}
	defer ks.mu.RUnlock()
	rc := C.sett_batch_delete_range_in(b.b, h, ptr(start), C.size_t(len(start)), ptr(end), C.size_t(len(end)))
	runtime.KeepAlive(start)
	runtime.KeepAlive(end)
	return status(rc, nil)
}

// GetIn returns a copy of key's value in keyspace ks as the transaction sees
// it, or ErrNotFound; tracked for conflicts like Get.
func (t *Txn) GetIn(ks *Keyspace, key []byte) ([]byte, error) {
	if t.t == nil {
		return nil, ErrClosed
	}
	h, err := ks.handle()
	if err != nil {
		return nil, err
	}
	defer ks.mu.RUnlock()
	var buf C.sett_buf_t
	var cerr *C.sett_error_t
	rc := C.sett_txn_get_in(t.t, h, ptr(key), C.size_t(len(key)), &buf, &cerr)
	runtime.KeepAlive(key)
	if err := status(rc, cerr); err != nil {
		return nil, err
	}
	return takeBuf(&buf), nil
}

// SetIn buffers a put in keyspace ks, applied at Commit with the
// transaction's other writes in any keyspace.
func (t *Txn) SetIn(ks *Keyspace, key, value []byte) error {
	if t.t == nil {
		return ErrClosed
	}
	h, err := ks.handle()
	if err != nil {
		return err
	}
	defer ks.mu.RUnlock()
	var cerr *C.sett_error_t
	rc := C.sett_txn_put_in(t.t, h, ptr(key), C.size_t(len(key)), ptr(value), C.size_t(len(value)), &cerr)
	runtime.KeepAlive(key)
	runtime.KeepAlive(value)
	return status(rc, cerr)
}

// DeleteIn buffers a delete in keyspace ks.
func (t *Txn) DeleteIn(ks *Keyspace, key []byte) error {
	if t.t == nil {
		return ErrClosed
	}
	h, err := ks.handle()
	if err != nil {
		return err
	}
	defer ks.mu.RUnlock()
	var cerr *C.sett_error_t
	rc := C.sett_txn_delete_in(t.t, h, ptr(key), C.size_t(len(key)), &cerr)
	runtime.KeepAlive(key)
	return status(rc, cerr)
}

// NewIteratorIn iterates keyspace ks as the transaction sees it (keys as
// Keyspace.NewIterator returns them).
func (t *Txn) NewIteratorIn(ks *Keyspace, o IteratorOptions) (*Iterator, error) {
	if t.t == nil {
		return nil, ErrClosed
	}
	co, err := newIterOptions(o)
	if err != nil {
		return nil, err
	}
	defer C.sett_iter_options_free(co)
	h, err := ks.handle()
	if err != nil {
		return nil, err
	}
	var it *C.sett_iter_t
	var cerr *C.sett_error_t
	rc := C.sett_txn_iter_new_in(t.t, h, co, &it, &cerr)
	ks.mu.RUnlock()
	if err := status(rc, cerr); err != nil {
		return nil, err
	}
	return newIterator(it, o.Limit), nil
}

// Subscribe delivers the committed writes to this keyspace under prefixes
// (its own keys; none: every key), as DB.Subscribe, with keys as they were
// set. A range delete's end (Value) is empty when it is the keyspace's end
// (a drop of the keyspace is one range delete from "" to ""). DB.Subscribe never
// sees keyspace writes.
func (k *Keyspace) Subscribe(ctx context.Context, cb func([]Change) error, from uint64, prefixes ...[]byte) error {
	if cb == nil {
		return argError(C.SETT_INVALID_ARGUMENT, "Subscribe needs a callback")
	}
	h, err := k.handle()
	if err != nil {
		return err
	}
	sub, err := openSubscription(from, prefixes, func(list *C.sett_bytes_t, n C.size_t, from C.uint64_t, hasFrom C.uint32_t, sub **C.sett_subscription_t, cerr **C.sett_error_t) C.int {
		return C.sett_keyspace_subscribe(h, list, n, from, hasFrom, 0, sub, cerr)
	})
	k.mu.RUnlock()
	if err != nil {
		return err
	}
	return deliver(ctx, sub, cb)
}
