package sett

/*
#include <stdlib.h>
#include <sett.h>
*/
import "C"

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
)

// store is what DB (the default keyspace) and Keyspace (a named one) share:
// an ordered map behind a C handle that a read lock holds open. Each
// operation both types offer is written once below, over store; a type
// supplies only the lock and the one C call of each operation.
type store interface {
	// rlock holds the handle open until runlock, or returns ErrClosed.
	rlock() error
	runlock()

	cGet(key []byte, buf *C.sett_buf_t, cerr **C.sett_error_t) C.int
	cPut(key, value []byte, cerr **C.sett_error_t) C.int
	cPutWith(e *Entry, ttl C.uint64_t, cerr **C.sett_error_t) C.int
	cDelete(key []byte, cerr **C.sett_error_t) C.int
	cMultiGetInto(keys **C.uint8_t, lens *C.size_t, n C.size_t, dst *C.uint8_t, capacity C.size_t, vlens *C.size_t, st *C.int, needed *C.size_t, cerr **C.sett_error_t) C.int
	cMerge(key, operand []byte, cerr **C.sett_error_t) C.int
	cDeleteRange(start, end []byte, cerr **C.sett_error_t) C.int
	// iterTarget names the handle for openIterator.
	iterTarget() iterTarget
	cSubscribe(list *C.sett_bytes_t, n C.size_t, from C.uint64_t, hasFrom C.uint32_t, sub **C.sett_subscription_t, cerr **C.sett_error_t) C.int
}

func (d *DB) rlock() error {
	_, err := d.handle()
	return err
}

func (d *DB) runlock() { d.mu.RUnlock() }

func (k *Keyspace) rlock() error {
	_, err := k.handle()
	return err
}

func (k *Keyspace) runlock() { k.mu.RUnlock() }

// The C calls, each made with the handle held (store.rlock).

func (d *DB) cGet(key []byte, buf *C.sett_buf_t, cerr **C.sett_error_t) C.int {
	return C.sett_get(d.db, ptr(key), C.size_t(len(key)), buf, cerr)
}

func (k *Keyspace) cGet(key []byte, buf *C.sett_buf_t, cerr **C.sett_error_t) C.int {
	return C.sett_keyspace_get(k.ks, ptr(key), C.size_t(len(key)), buf, cerr)
}

func (d *DB) cPut(key, value []byte, cerr **C.sett_error_t) C.int {
	return C.sett_put(d.db, ptr(key), C.size_t(len(key)), ptr(value), C.size_t(len(value)), cerr)
}

func (k *Keyspace) cPut(key, value []byte, cerr **C.sett_error_t) C.int {
	return C.sett_keyspace_put(k.ks, ptr(key), C.size_t(len(key)), ptr(value), C.size_t(len(value)), cerr)
}

func (d *DB) cPutWith(e *Entry, ttl C.uint64_t, cerr **C.sett_error_t) C.int {
	return C.sett_put_with(d.db, ptr(e.Key), C.size_t(len(e.Key)), ptr(e.Value), C.size_t(len(e.Value)),
		C.uint8_t(e.UserMeta), ttl, cerr)
}

func (k *Keyspace) cPutWith(e *Entry, ttl C.uint64_t, cerr **C.sett_error_t) C.int {
	return C.sett_keyspace_put_with(k.ks, ptr(e.Key), C.size_t(len(e.Key)), ptr(e.Value), C.size_t(len(e.Value)),
		C.uint8_t(e.UserMeta), ttl, cerr)
}

func (d *DB) cMultiGetInto(keys **C.uint8_t, lens *C.size_t, n C.size_t, dst *C.uint8_t, capacity C.size_t, vlens *C.size_t, st *C.int, needed *C.size_t, cerr **C.sett_error_t) C.int {
	return C.sett_multi_get_into(d.db, keys, lens, n, dst, capacity, vlens, st, needed, cerr)
}

func (d *DB) cMerge(key, operand []byte, cerr **C.sett_error_t) C.int {
	return C.sett_merge(d.db, ptr(key), C.size_t(len(key)), ptr(operand), C.size_t(len(operand)), cerr)
}

func (k *Keyspace) cMerge(key, operand []byte, cerr **C.sett_error_t) C.int {
	return C.sett_keyspace_merge(k.ks, ptr(key), C.size_t(len(key)), ptr(operand), C.size_t(len(operand)), cerr)
}

func (k *Keyspace) cMultiGetInto(keys **C.uint8_t, lens *C.size_t, n C.size_t, dst *C.uint8_t, capacity C.size_t, vlens *C.size_t, st *C.int, needed *C.size_t, cerr **C.sett_error_t) C.int {
	return C.sett_keyspace_multi_get_into(k.ks, keys, lens, n, dst, capacity, vlens, st, needed, cerr)
}

func (d *DB) cDelete(key []byte, cerr **C.sett_error_t) C.int {
	return C.sett_delete(d.db, ptr(key), C.size_t(len(key)), cerr)
}

func (k *Keyspace) cDelete(key []byte, cerr **C.sett_error_t) C.int {
	return C.sett_keyspace_delete(k.ks, ptr(key), C.size_t(len(key)), cerr)
}

func (d *DB) cDeleteRange(start, end []byte, cerr **C.sett_error_t) C.int {
	return C.sett_delete_range(d.db, ptr(start), C.size_t(len(start)), ptr(end), C.size_t(len(end)), cerr)
}

func (k *Keyspace) cDeleteRange(start, end []byte, cerr **C.sett_error_t) C.int {
	return C.sett_keyspace_delete_range(k.ks, ptr(start), C.size_t(len(start)), ptr(end), C.size_t(len(end)), cerr)
}

func (d *DB) iterTarget() iterTarget {
	return iterTarget{kind: iterOnDB, handle: unsafe.Pointer(d.db)}
}

func (k *Keyspace) iterTarget() iterTarget {
	return iterTarget{kind: iterOnKeyspace, handle: unsafe.Pointer(k.ks)}
}

func (d *DB) cSubscribe(list *C.sett_bytes_t, n C.size_t, from C.uint64_t, hasFrom C.uint32_t, sub **C.sett_subscription_t, cerr **C.sett_error_t) C.int {
	return C.sett_subscribe(d.db, list, n, from, hasFrom, 0, sub, cerr)
}

func (k *Keyspace) cSubscribe(list *C.sett_bytes_t, n C.size_t, from C.uint64_t, hasFrom C.uint32_t, sub **C.sett_subscription_t, cerr **C.sett_error_t) C.int {
	return C.sett_keyspace_subscribe(k.ks, list, n, from, hasFrom, 0, sub, cerr)
}

// The operations, written once over store.

func storeGet(s store, key []byte) ([]byte, error) {
	if err := s.rlock(); err != nil {
		return nil, err
	}
	defer s.runlock()
	return takeValue(key, func(buf *C.sett_buf_t, cerr **C.sett_error_t) C.int { return s.cGet(key, buf, cerr) })
}

// takeValue runs a get call (sett_get and its kin) and returns a copy of the
// value it found.
func takeValue(key []byte, call func(buf *C.sett_buf_t, cerr **C.sett_error_t) C.int) ([]byte, error) {
	var buf C.sett_buf_t
	var cerr *C.sett_error_t
	rc := call(&buf, &cerr)
	runtime.KeepAlive(key)
	if err := status(rc, cerr); err != nil {
		return nil, err
	}
	return takeBuf(&buf), nil
}

func storeSet(s store, key, value []byte) error {
	if err := s.rlock(); err != nil {
		return err
	}
	defer s.runlock()
	var cerr *C.sett_error_t
	rc := s.cPut(key, value, &cerr)
	runtime.KeepAlive(key)
	runtime.KeepAlive(value)
	return status(rc, cerr)
}

func storeSetEntry(s store, e *Entry) error {
	ttl, err := e.ttlMillis()
	if err != nil {
		return err
	}
	if err := s.rlock(); err != nil {
		return err
	}
	defer s.runlock()
	var cerr *C.sett_error_t
	rc := s.cPutWith(e, ttl, &cerr)
	runtime.KeepAlive(e)
	return status(rc, cerr)
}

func storeMerge(s store, key, operand []byte) error {
	if err := s.rlock(); err != nil {
		return err
	}
	defer s.runlock()
	var cerr *C.sett_error_t
	rc := s.cMerge(key, operand, &cerr)
	runtime.KeepAlive(key)
	runtime.KeepAlive(operand)
	return status(rc, cerr)
}

func storeDelete(s store, key []byte) error {
	if err := s.rlock(); err != nil {
		return err
	}
	defer s.runlock()
	var cerr *C.sett_error_t
	rc := s.cDelete(key, &cerr)
	runtime.KeepAlive(key)
	return status(rc, cerr)
}

func storeDeleteRange(s store, start, end []byte) error {
	if err := s.rlock(); err != nil {
		return err
	}
	defer s.runlock()
	var cerr *C.sett_error_t
	rc := s.cDeleteRange(start, end, &cerr)
	runtime.KeepAlive(start)
	runtime.KeepAlive(end)
	return status(rc, cerr)
}

func storeNewIterator(s store, o IteratorOptions) (*Iterator, error) {
	return openIterator(o, s.rlock, s.runlock, s.iterTarget)
}

func storeSubscribe(s store, ctx context.Context, cb func([]Change) error, from uint64, prefixes [][]byte) error {
	if cb == nil {
		return argError(C.SETT_INVALID_ARGUMENT, "Subscribe needs a callback")
	}
	if err := s.rlock(); err != nil {
		return err
	}
	sub, err := openSubscription(from, prefixes, s.cSubscribe)
	s.runlock()
	if err != nil {
		return err
	}
	return deliver(ctx, sub, cb)
}

// storeMultiGet reads many keys of s at one consistent point in one cgo
// call; a missing key gives a nil value. The values share one allocation,
// each capped at its own length, so that appending to one cannot overwrite
// the next.
func storeMultiGet(s store, keys [][]byte) ([][]byte, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	var backing []byte
	out := make([][]byte, len(keys))
	err := storeMultiGetFunc(s, keys, func(i int, v []byte) {
		if v == nil {
			return
		}
		if backing == nil {
			// The first value found: room for this call's every value.
			backing = make([]byte, 0, max(multiGetBytes.Load(), int64(len(v))))
		}
		at := len(backing)
		backing = append(backing, v...)
		out[i] = backing[at:len(backing):len(backing)]
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// storeMultiGetFunc reads many keys of s at one consistent point in one
// cgo call and calls fn(i, value) for each key in the order asked, value
// nil for a missing key. The values are lent: they live in a buffer that
// the next call reuses, so fn copies what it keeps. No allocation per call
// once the buffer has grown to a batch's size.
func storeMultiGetFunc(s store, keys [][]byte, fn func(i int, v []byte)) error {
	if err := s.rlock(); err != nil {
		return err
	}
	defer s.runlock()
	n := len(keys)
	if n == 0 {
		return nil
	}
	sc := multiGetPool.Get().(*multiGetScratch)
	defer multiGetPool.Put(sc)
	sc.reset(n)
	for _, k := range keys {
		sc.keys = append(sc.keys, k...)
	}
	// The keys are copied into one buffer, pinned once; C reads their
	// addresses from ptrs, typed uintptr so that it holds no Go pointer for
	// cgo's checks (the memory they point to is pinned until the call ends).
	var pinner runtime.Pinner
	defer pinner.Unpin()
	if len(sc.keys) > 0 {
		pinner.Pin(&sc.keys[0])
	}
	base, at := uintptr(unsafe.Pointer(unsafe.SliceData(sc.keys))), 0
	for i, k := range keys {
		sc.ptrs[i] = 0
		if len(k) > 0 {
			sc.ptrs[i] = base + uintptr(at)
		}
		sc.klens[i] = C.size_t(len(k))
		at += len(k)
	}
	// A buffer too small makes C read every key again: a scratch that the
	// pool made anew (it drops its scratches at each GC) starts at what the
	// last call needed, plus a quarter.
	if hint := int(multiGetBytes.Load()); cap(sc.vals) < hint {
		sc.vals = make([]byte, 0, hint+hint/4)
	}
	for {
		var needed C.size_t
		var cerr *C.sett_error_t
		vals := sc.vals[:cap(sc.vals)]
		rc := s.cMultiGetInto((**C.uint8_t)(unsafe.Pointer(&sc.ptrs[0])), &sc.klens[0], C.size_t(n),
			(*C.uint8_t)(unsafe.Pointer(unsafe.SliceData(vals))), C.size_t(len(vals)), &sc.vlens[0], &sc.st[0], &needed, &cerr)
		if rc == C.SETT_BUFFER_TOO_SMALL {
			C.sett_error_free(cerr)
			sc.vals = make([]byte, 0, int(needed)+int(needed)/4)
			continue
		}
		if err := status(rc, cerr); err != nil {
			return err
		}
		multiGetBytes.Store(int64(needed))
		at = 0
		for i := 0; i < n; i++ {
			if sc.st[i] != C.SETT_OK {
				fn(i, nil)
				continue
			}
			l := int(sc.vlens[i])
			// Never nil for a value found, even an empty one (vals is not
			// nil: the scratch starts with room).
			fn(i, vals[at:at+l:at+l])
			at += l
		}
		return nil
	}
}

// multiGetScratch is what one MultiGet hands to C, kept between calls so
// that a batch allocates only what it returns: the keys packed into one
// buffer, their addresses and lengths, and the buffer C copies values into.
type multiGetScratch struct {
	keys         []byte
	ptrs         []uintptr
	klens, vlens []C.size_t
	st           []C.int
	vals         []byte
}

var multiGetPool = sync.Pool{New: func() any { return &multiGetScratch{vals: make([]byte, 0, 4096)} }}

// multiGetBytes is what the last MultiGet's values took, by which a new
// scratch and an owned result are sized.
var multiGetBytes atomic.Int64

// reset empties the scratch and sizes its arrays for n keys.
func (sc *multiGetScratch) reset(n int) {
	sc.keys = sc.keys[:0]
	if cap(sc.ptrs) < n {
		sc.ptrs = make([]uintptr, n)
		sc.klens = make([]C.size_t, n)
		sc.vlens = make([]C.size_t, n)
		sc.st = make([]C.int, n)
	}
	sc.ptrs, sc.klens, sc.vlens, sc.st = sc.ptrs[:n], sc.klens[:n], sc.vlens[:n], sc.st[:n]
}
