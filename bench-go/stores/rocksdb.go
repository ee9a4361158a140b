package stores

/*
#cgo LDFLAGS: -lrocksdb
#include <stdlib.h>
#include "rocksdb/c.h"
*/
import "C"

import (
	"errors"
	"runtime"
	"unsafe"
)

// rocksStore is RocksDB (Debian's librocksdb-dev, 7.8.3) through its C API.
type rocksStore struct {
	db    *C.rocksdb_t
	opts  *C.rocksdb_options_t
	bbto  *C.rocksdb_block_based_table_options_t
	cache *C.rocksdb_cache_t
	wo    *C.rocksdb_writeoptions_t
	ro    *C.rocksdb_readoptions_t
	name  string
}

// BlockCacheBytes is RocksDB's block cache (its default size): sett and Badger
// read through the OS page cache (sett) or their own caches (Badger, defaults).
const BlockCacheBytes = 8 << 20

func rocksErr(cerr *C.char) error {
	if cerr == nil {
		return nil
	}
	defer C.rocksdb_free(unsafe.Pointer(cerr))
	return errors.New("rocksdb: " + C.GoString(cerr))
}

// openRocks opens RocksDB with a 10 bits/key bloom filter, an 8 MiB block
// cache, no compression (values are random), and, if blob, BlobDB with
// min_blob_size = ValueThreshold.
func openRocks(dir string, o Options, blob bool) (Store, error) {
	s := &rocksStore{name: "rocksdb"}
	s.opts = C.rocksdb_options_create()
	C.rocksdb_options_set_create_if_missing(s.opts, 1)
	C.rocksdb_options_set_compression(s.opts, C.rocksdb_no_compression)
	C.rocksdb_options_increase_parallelism(s.opts, C.int(runtime.NumCPU()))
	s.bbto = C.rocksdb_block_based_options_create()
	C.rocksdb_block_based_options_set_filter_policy(s.bbto, C.rocksdb_filterpolicy_create_bloom(10))
	s.cache = C.rocksdb_cache_create_lru(BlockCacheBytes)
	C.rocksdb_block_based_options_set_block_cache(s.bbto, s.cache)
	C.rocksdb_options_set_block_based_table_factory(s.opts, s.bbto)
	if blob {
		s.name = "rocksdb-blob"
		C.rocksdb_options_set_enable_blob_files(s.opts, 1)
		C.rocksdb_options_set_min_blob_size(s.opts, ValueThreshold)
	}
	cdir := C.CString(dir)
	defer C.free(unsafe.Pointer(cdir))
	var cerr *C.char
	if o.ReadOnly {
		s.db = C.rocksdb_open_for_read_only(s.opts, cdir, 0, &cerr)
	} else {
		s.db = C.rocksdb_open(s.opts, cdir, &cerr)
	}
	if err := rocksErr(cerr); err != nil {
		s.free()
		return nil, err
	}
	s.wo = C.rocksdb_writeoptions_create()
	if o.Sync {
		C.rocksdb_writeoptions_set_sync(s.wo, 1)
	}
	s.ro = C.rocksdb_readoptions_create()
	return s, nil
}

func (s *rocksStore) Name() string { return s.name }

func bptr(b []byte) *C.char {
	if len(b) == 0 {
		return nil
	}
	return (*C.char)(unsafe.Pointer(&b[0]))
}

func (s *rocksStore) WriteBatch(keys, vals [][]byte) error {
	wb := C.rocksdb_writebatch_create()
	defer C.rocksdb_writebatch_destroy(wb)
	for i := range keys {
		C.rocksdb_writebatch_put(wb, bptr(keys[i]), C.size_t(len(keys[i])), bptr(vals[i]), C.size_t(len(vals[i])))
	}
	runtime.KeepAlive(keys)
	runtime.KeepAlive(vals)
	var cerr *C.char
	C.rocksdb_write(s.db, s.wo, wb, &cerr)
	return rocksErr(cerr)
}

// Get copies the value out of RocksDB's malloc'd buffer and frees it.
func (s *rocksStore) Get(key, dst []byte) ([]byte, error) {
	var n C.size_t
	var cerr *C.char
	v := C.rocksdb_get(s.db, s.ro, bptr(key), C.size_t(len(key)), &n, &cerr)
	runtime.KeepAlive(key)
	if err := rocksErr(cerr); err != nil {
		return nil, err
	}
	if v == nil {
		return nil, ErrNotFound
	}
	defer C.rocksdb_free(unsafe.Pointer(v))
	return append(dst[:0], unsafe.Slice((*byte)(unsafe.Pointer(v)), int(n))...), nil
}

func (s *rocksStore) Iterate(keysOnly bool, limit int, fn func(k, v []byte) bool) (int, error) {
	it := C.rocksdb_create_iterator(s.db, s.ro)
	defer C.rocksdb_iter_destroy(it)
	n := 0
	for C.rocksdb_iter_seek_to_first(it); C.rocksdb_iter_valid(it) != 0 && n < limit; C.rocksdb_iter_next(it) {
		var kl, vl C.size_t
		k := C.rocksdb_iter_key(it, &kl)
		var v []byte
		if !keysOnly {
			vp := C.rocksdb_iter_value(it, &vl)
			v = unsafe.Slice((*byte)(unsafe.Pointer(vp)), int(vl))
		}
		n++
		if !fn(unsafe.Slice((*byte)(unsafe.Pointer(k)), int(kl)), v) {
			break
		}
	}
	var cerr *C.char
	C.rocksdb_iter_get_error(it, &cerr)
	return n, rocksErr(cerr)
}

func (s *rocksStore) Close() error {
	if s.db != nil {
		C.rocksdb_close(s.db)
		s.db = nil
	}
	s.free()
	return nil
}

func (s *rocksStore) free() {
	if s.wo != nil {
		C.rocksdb_writeoptions_destroy(s.wo)
		s.wo = nil
	}
	if s.ro != nil {
		C.rocksdb_readoptions_destroy(s.ro)
		s.ro = nil
	}
	if s.opts != nil {
		C.rocksdb_options_destroy(s.opts)
		s.opts = nil
	}
	if s.bbto != nil {
		C.rocksdb_block_based_options_destroy(s.bbto)
		s.bbto = nil
	}
	if s.cache != nil {
		C.rocksdb_cache_destroy(s.cache)
		s.cache = nil
	}
}
