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
	return storeGet(k, key)
}

// MultiGet reads many keys of the keyspace at one consistent point in one
// cgo call; a missing key gives a nil value.
func (k *Keyspace) MultiGet(keys [][]byte) ([][]byte, error) { return storeMultiGet(k, keys) }

// MultiGetFunc is [DB.MultiGetFunc] over the keyspace's keys.
func (k *Keyspace) MultiGetFunc(keys [][]byte, fn func(i int, value []byte)) error {
	return storeMultiGetFunc(k, keys, fn)
}

// Set stores key → value in the keyspace (with its default TTL, if any).
func (k *Keyspace) Set(key, value []byte) error {
	return storeSet(k, key, value)
}

// SetEntry stores e.Key → e.Value in the keyspace with its user-meta byte
// and TTL (0: the keyspace's default TTL, if any).
func (k *Keyspace) SetEntry(e *Entry) error {
	return storeSetEntry(k, e)
}

// Merge merges operand into key of the keyspace (see DB.Merge).
func (k *Keyspace) Merge(key, operand []byte) error {
	return storeMerge(k, key, operand)
}

// Delete removes key from the keyspace (no error if it is absent).
func (k *Keyspace) Delete(key []byte) error {
	return storeDelete(k, key)
}

// DeleteRange deletes every key of the keyspace in [start, end) with one
// range tombstone (see DB.DeleteRange); an empty end is the keyspace's end.
func (k *Keyspace) DeleteRange(start, end []byte) error {
	return storeDeleteRange(k, start, end)
}

// NewIterator starts an iterator over a snapshot of the keyspace taken now;
// prefix and bounds are in the keyspace's keys, and keys come back as they
// were set.
func (k *Keyspace) NewIterator(o IteratorOptions) (*Iterator, error) {
	return storeNewIterator(k, o)
}

// SetIn adds a put of key → value in keyspace ks (with its default TTL, if
// any); a batch may write several keyspaces and the default one atomically.
func (b *Batch) SetIn(ks *Keyspace, key, value []byte) error {
	return b.addIn(ks, func(h *C.sett_keyspace_t) C.int {
		rc := C.sett_batch_put_in(b.b, h, ptr(key), C.size_t(len(key)), ptr(value), C.size_t(len(value)))
		runtime.KeepAlive(key)
		runtime.KeepAlive(value)
		return rc
	})
}

// MergeIn adds a merge of operand into key in keyspace ks (see Batch.Merge).
func (b *Batch) MergeIn(ks *Keyspace, key, operand []byte) error {
	return b.addIn(ks, func(h *C.sett_keyspace_t) C.int {
		rc := C.sett_batch_merge_in(b.b, h, ptr(key), C.size_t(len(key)), ptr(operand), C.size_t(len(operand)))
		runtime.KeepAlive(key)
		runtime.KeepAlive(operand)
		return rc
	})
}

// DeleteIn adds a delete of key in keyspace ks.
func (b *Batch) DeleteIn(ks *Keyspace, key []byte) error {
	return b.addIn(ks, func(h *C.sett_keyspace_t) C.int {
		rc := C.sett_batch_delete_in(b.b, h, ptr(key), C.size_t(len(key)))
		runtime.KeepAlive(key)
		return rc
	})
}

// DeleteRangeIn adds a delete of every key of keyspace ks in [start, end)
// (an empty end is the keyspace's end).
func (b *Batch) DeleteRangeIn(ks *Keyspace, start, end []byte) error {
	return b.addIn(ks, func(h *C.sett_keyspace_t) C.int {
		rc := C.sett_batch_delete_range_in(b.b, h, ptr(start), C.size_t(len(start)), ptr(end), C.size_t(len(end)))
		runtime.KeepAlive(start)
		runtime.KeepAlive(end)
		return rc
	})
}

// addIn adds one op in keyspace ks to the batch through call, with ks held
// open.
func (b *Batch) addIn(ks *Keyspace, call func(h *C.sett_keyspace_t) C.int) error {
	if b.b == nil {
		return ErrClosed
	}
	if err := ks.rlock(); err != nil {
		return err
	}
	defer ks.runlock()
	return status(call(ks.ks), nil)
}

// callIn buffers one write in keyspace ks through call, with ks held open.
func (t *Txn) callIn(ks *Keyspace, call func(h *C.sett_keyspace_t, cerr **C.sett_error_t) C.int) error {
	if t.t == nil {
		return ErrClosed
	}
	if err := ks.rlock(); err != nil {
		return err
	}
	defer ks.runlock()
	var cerr *C.sett_error_t
	return status(call(ks.ks, &cerr), cerr)
}

// GetIn returns a copy of key's value in keyspace ks as the transaction sees
// it, or ErrNotFound; tracked for conflicts like Get.
func (t *Txn) GetIn(ks *Keyspace, key []byte) ([]byte, error) {
	if t.t == nil {
		return nil, ErrClosed
	}
	if err := ks.rlock(); err != nil {
		return nil, err
	}
	defer ks.runlock()
	return takeValue(key, func(buf *C.sett_buf_t, cerr **C.sett_error_t) C.int {
		return C.sett_txn_get_in(t.t, ks.ks, ptr(key), C.size_t(len(key)), buf, cerr)
	})
}

// SetIn buffers a put in keyspace ks, applied at Commit with the
// transaction's other writes in any keyspace.
func (t *Txn) SetIn(ks *Keyspace, key, value []byte) error {
	return t.callIn(ks, func(h *C.sett_keyspace_t, cerr **C.sett_error_t) C.int {
		rc := C.sett_txn_put_in(t.t, h, ptr(key), C.size_t(len(key)), ptr(value), C.size_t(len(value)), cerr)
		runtime.KeepAlive(key)
		runtime.KeepAlive(value)
		return rc
	})
}

// MergeIn buffers a merge of operand into key in keyspace ks (see Txn.Merge).
func (t *Txn) MergeIn(ks *Keyspace, key, operand []byte) error {
	return t.callIn(ks, func(h *C.sett_keyspace_t, cerr **C.sett_error_t) C.int {
		rc := C.sett_txn_merge_in(t.t, h, ptr(key), C.size_t(len(key)), ptr(operand), C.size_t(len(operand)), cerr)
		runtime.KeepAlive(key)
		runtime.KeepAlive(operand)
		return rc
	})
}

// DeleteIn buffers a delete in keyspace ks.
func (t *Txn) DeleteIn(ks *Keyspace, key []byte) error {
	return t.callIn(ks, func(h *C.sett_keyspace_t, cerr **C.sett_error_t) C.int {
		rc := C.sett_txn_delete_in(t.t, h, ptr(key), C.size_t(len(key)), cerr)
		runtime.KeepAlive(key)
		return rc
	})
}

// NewIteratorIn iterates keyspace ks as the transaction sees it (keys as
// Keyspace.NewIterator returns them).
func (t *Txn) NewIteratorIn(ks *Keyspace, o IteratorOptions) (*Iterator, error) {
	if t.t == nil {
		return nil, ErrClosed
	}
	return openIterator(o, ks.rlock, ks.runlock, func() iterTarget {
		return iterTarget{kind: iterOnTxnIn, handle: unsafe.Pointer(t.t), ks: ks.ks}
	})
}

// Subscribe delivers the committed writes to this keyspace under prefixes
// (its own keys; none: every key), as DB.Subscribe, with keys as they were
// set. A range delete's end (Value) is empty when it is the keyspace's end
// (a drop of the keyspace is one range delete from "" to ""). DB.Subscribe never
// sees keyspace writes.
func (k *Keyspace) Subscribe(ctx context.Context, cb func([]Change) error, from uint64, prefixes ...[]byte) error {
	return storeSubscribe(k, ctx, cb, from, prefixes)
}
