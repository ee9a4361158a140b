package stores

/*
#include <stdlib.h>
#include "rocksdb/c.h"
*/
import "C"

import (
	"bytes"
	"runtime"
)

type rocksKV struct {
	*rocksStore
	hint *valueSizeHint
}

func openRocksKV(dir string, o KVOptions) (KV, error) {
	s, err := openRocks(dir, Options{Sync: o.Fsync, CacheBytes: o.cacheBytes()}, false)
	if err != nil {
		return nil, err
	}
	return rocksKV{rocksStore: s.(*rocksStore), hint: &valueSizeHint{}}, nil
}

// Set is one rocksdb_put: one cgo crossing, as sett's Set.
func (s rocksKV) Set(key, value []byte) error {
	var cerr *C.char
	C.rocksdb_put(s.db, s.wo, bptr(key), C.size_t(len(key)), bptr(value), C.size_t(len(value)), &cerr)
	runtime.KeepAlive(key)
	runtime.KeepAlive(value)
	return rocksErr(cerr)
}

// BatchSet is one crossing too (rocksStore.WriteBatch).
func (s rocksKV) BatchSet(keys, vals [][]byte) error { return s.WriteBatch(keys, vals) }

func (s rocksKV) Get(key []byte) ([]byte, bool, error) {
	v, err := s.rocksStore.Get(key, s.hint.buf())
	s.hint.saw(len(v))
	if err == ErrNotFound {
		return nil, false, nil
	}
	return v, err == nil, err
}

func (s rocksKV) BatchGet(keys [][]byte) ([][]byte, error) {
	out := make([][]byte, len(keys))
	for i, k := range keys {
		v, _, err := s.Get(k)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func (s rocksKV) Delete(key []byte) error {
	var cerr *C.char
	C.rocksdb_delete(s.db, s.wo, bptr(key), C.size_t(len(key)), &cerr)
	runtime.KeepAlive(key)
	return rocksErr(cerr)
}

func (s rocksKV) Prefix(prefix []byte, limit int, fn func(k, v []byte) bool) (int, error) {
	it := C.rocksdb_create_iterator(s.db, s.ro)
	defer C.rocksdb_iter_destroy(it)
	C.rocksdb_iter_seek(it, bptr(prefix), C.size_t(len(prefix)))
	runtime.KeepAlive(prefix)
	n := 0
	_, err := s.scanFrom(it, false, limit, func(k, v []byte) bool {
		if !bytes.HasPrefix(k, prefix) {
			return false
		}
		n++
		return fn(k, v)
	})
	return n, err
}

func (s rocksKV) Clear() error {
	var keys [][]byte
	if _, err := s.Prefix(nil, 1<<62, func(k, _ []byte) bool {
		keys = append(keys, append([]byte(nil), k...))
		return true
	}); err != nil {
		return err
	}
	wb := C.rocksdb_writebatch_create()
	defer C.rocksdb_writebatch_destroy(wb)
	for _, k := range keys {
		C.rocksdb_writebatch_delete(wb, bptr(k), C.size_t(len(k)))
	}
	runtime.KeepAlive(keys)
	var cerr *C.char
	C.rocksdb_write(s.db, s.wo, wb, &cerr)
	return rocksErr(cerr)
}

func (s rocksKV) Flush() error {
	var cerr *C.char
	C.rocksdb_flush_wal(s.db, 1, &cerr)
	return rocksErr(cerr)
}

// cacheCapacity reads the block cache's capacity back from RocksDB.
func (s rocksKV) cacheCapacity() (int64, error) {
	return int64(C.rocksdb_cache_get_capacity(s.cache)), nil
}
