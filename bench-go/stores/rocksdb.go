package stores

/*
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "rocksdb/c.h"

// rocksdb_version.cc: GetRocksVersionAsString of the linked library.
const char *rk_version(void);

// One crossing per read, as sett_get_into: look the key up, copy the value into
// the caller's buffer and release RocksDB's pinned copy. Returns 1 found (*vlen
// = its length), 0 absent, -1 if dst is too small (*vlen = the size needed).
static int rk_get_into(rocksdb_t *db, const rocksdb_readoptions_t *ro, const char *key,
                       size_t klen, char *dst, size_t cap, size_t *vlen, char **err) {
	rocksdb_pinnableslice_t *p = rocksdb_get_pinned(db, ro, key, klen, err);
	if (p == NULL) return 0;
	size_t n = 0;
	const char *v = rocksdb_pinnableslice_value(p, &n);
	*vlen = n;
	int rc = -1;
	if (n <= cap) {
		if (n > 0) memcpy(dst, v, n);
		rc = 1;
	}
	rocksdb_pinnableslice_destroy(p);
	return rc;
}

// One crossing per write batch, as sett's batch commit: n records packed as
// [klen u32 LE][vlen u32 LE][key][value] in buf (len bytes) are put into a
// batch that is written with wo. Returns 0, or -1 (nothing written) if the
// records do not fill buf exactly.
static int rk_write_packed(rocksdb_t *db, const rocksdb_writeoptions_t *wo, const char *buf,
                           size_t len, size_t n, char **err) {
	rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
	size_t at = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t kl, vl;
		if (len - at < 8) break;
		memcpy(&kl, buf + at, 4);
		memcpy(&vl, buf + at + 4, 4);
		if (len - at - 8 < (size_t)kl + vl) break;
		rocksdb_writebatch_put(wb, buf + at + 8, kl, buf + at + 8 + kl, vl);
		at += 8 + (size_t)kl + vl;
	}
	int rc = -1;
	if (at == len && (size_t)rocksdb_writebatch_count(wb) == n) {
		rocksdb_write(db, wo, wb, err);
		rc = 0;
	}
	rocksdb_writebatch_destroy(wb);
	return rc;
}

// One crossing per MultiGet: n keys packed as [klen u32 LE][key] in kbuf (klen
// bytes) are read by RocksDB's batched MultiGet (rocksdb_batched_multi_get_pinned_cf,
// which sorts the keys and groups their lookups by table and block). Found
// values are copied back to back into dst and lens[i] is the value's length,
// or -1 when absent. Returns 0; -1 if dst is too small (*need = the bytes the
// values take; dst and lens then hold nothing); -2 if kbuf is malformed.
static int rk_multi_get_packed(rocksdb_t *db, rocksdb_column_family_handle_t *cf,
                               const rocksdb_readoptions_t *ro, const char *kbuf,
                               size_t klen, size_t n, char *dst, size_t cap,
                               int64_t *lens, size_t *need, char **err) {
	rocksdb_slice_t *ks = malloc((n > 0 ? n : 1) * sizeof *ks);
	if (ks == NULL) return -2;
	size_t at = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t kl;
		if (klen - at < 4) { free(ks); return -2; }
		memcpy(&kl, kbuf + at, 4);
		if (klen - at - 4 < kl) { free(ks); return -2; }
		ks[i].data = kbuf + at + 4;
		ks[i].size = kl;
		at += 4 + (size_t)kl;
	}
	if (at != klen) { free(ks); return -2; }
	rocksdb_pinnable_multi_get_t *mg = rocksdb_batched_multi_get_pinned_cf(db, ro, cf, n, ks, 0);
	free(ks);
	size_t total = 0;
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		const char *v = NULL, *e = NULL;
		size_t vl = 0, el = 0;
		switch (rocksdb_pinnable_multi_get_result(mg, i, &v, &vl, &e, &el)) {
		case rocksdb_pinnable_multi_get_found:
			total += vl;
			break;
		case rocksdb_pinnable_multi_get_not_found:
			break;
		default:
			*err = strdup(e != NULL ? e : "MultiGet: a key's lookup failed");
			rc = -3;
		}
	}
	if (rc == 0 && total > cap) {
		*need = total;
		rc = -1;
	}
	for (size_t i = 0, off = 0; i < n && rc == 0; i++) {
		const char *v = NULL, *e = NULL;
		size_t vl = 0, el = 0;
		if (rocksdb_pinnable_multi_get_result(mg, i, &v, &vl, &e, &el) == rocksdb_pinnable_multi_get_found) {
			if (vl > 0) memcpy(dst + off, v, vl);
			lens[i] = (int64_t)vl;
			off += vl;
		} else {
			lens[i] = -1;
		}
	}
	rocksdb_pinnable_multi_get_destroy(mg);
	return rc;
}

// Many items per crossing, as sett_iter_next_batch: from the iterator's current
// position, append [klen u32 LE][vlen u32 LE][key][value] records to buf while
// they fit (at least one: -1 with *used = the size needed if the first does not),
// at most max_items, advancing past each one written.
static int rk_iter_fill(rocksdb_iterator_t *it, int keys_only, size_t max_items,
                        char *buf, size_t cap, size_t *count, size_t *used) {
	size_t n = 0, at = 0;
	while (n < max_items && rocksdb_iter_valid(it)) {
		size_t kl = 0, vl = 0;
		const char *k = rocksdb_iter_key(it, &kl);
		const char *v = keys_only ? NULL : rocksdb_iter_value(it, &vl);
		size_t need = 8 + kl + vl;
		if (at + need > cap) {
			if (n == 0) {
				*count = 0;
				*used = need;
				return -1;
			}
			break;
		}
		uint32_t k32 = (uint32_t)kl, v32 = (uint32_t)vl;
		memcpy(buf + at, &k32, 4);
		memcpy(buf + at + 4, &v32, 4);
		memcpy(buf + at + 8, k, kl);
		if (vl > 0) memcpy(buf + at + 8 + kl, v, vl);
		at += need;
		n++;
		rocksdb_iter_next(it);
	}
	*count = n;
	*used = at;
	return 0;
}
*/
import "C"

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"unsafe"
)

// rocksStore is RocksDB through its C API: the release build of
// scripts/rocksdb-release.sh (rocksdb_link.go).
type rocksStore struct {
	db       *C.rocksdb_t
	opts     *C.rocksdb_options_t
	bbto     *C.rocksdb_block_based_table_options_t
	cache    *C.rocksdb_cache_t
	wo       *C.rocksdb_writeoptions_t
	ro       *C.rocksdb_readoptions_t
	cf       *C.rocksdb_column_family_handle_t // the default column family, for MultiGet
	name     string
	readOnly bool
}

func rocksErr(cerr *C.char) error {
	if cerr == nil {
		return nil
	}
	defer C.rocksdb_free(unsafe.Pointer(cerr))
	return errors.New("rocksdb: " + C.GoString(cerr))
}

// RocksVersion is the version of the linked RocksDB, read from the library.
func RocksVersion() string { return C.GoString(C.rk_version()) }

// rocksSettings is what openRocks sets, for the reports.
func rocksSettings(o Options, blob bool) string {
	s := fmt.Sprintf("RocksDB %s (%s) through its C API: LRU block cache %d MiB (the memory budget; "+
		"index and filter blocks in table-reader memory, RocksDB's default), bloom filter 10 bits/key, 4 KiB blocks, "+
		"the release's default format_version, %s, "+
		"IncreaseParallelism(cores), level_compaction_dynamic_level_bytes, bytes_per_sync 1 MiB (the tuning guide's general settings); "+
		"64 MiB memtables (default); at the end of populate: flush the memtables and sync the WAL before close",
		RocksVersion(), RocksBuild, o.CacheBytes>>20, codecSetting(o))
	if blob {
		s += fmt.Sprintf("; rocksdb-blob rows: BlobDB (its integrated blob files) with min_blob_size %d B (the suite's threshold), "+
			"blob garbage collection on (age cutoff 0.25, its default), blob cache = the block cache (one budget, as its documentation recommends); "+
			"it has rows only at value sizes from that threshold up: below it BlobDB keeps every value in its tables and is the rocksdb row", ValueThreshold)
	}
	return s
}

// openRocks opens RocksDB with the settings rocksSettings describes.
func openRocks(dir string, o Options, blob bool) (Store, error) {
	s := &rocksStore{name: "rocksdb", readOnly: o.ReadOnly}
	s.opts = C.rocksdb_options_create()
	C.rocksdb_options_set_create_if_missing(s.opts, 1)
	if err := CheckCompression(o.Compression); err != nil {
		C.rocksdb_options_destroy(s.opts)
		return nil, err
	}
	switch o.Compression {
	case "lz4":
		C.rocksdb_options_set_compression(s.opts, C.rocksdb_lz4_compression)
	case "zstd":
		C.rocksdb_options_set_compression(s.opts, C.rocksdb_zstd_compression)
	default:
		C.rocksdb_options_set_compression(s.opts, C.rocksdb_no_compression)
	}
	C.rocksdb_options_increase_parallelism(s.opts, C.int(runtime.NumCPU()))
	C.rocksdb_options_set_level_compaction_dynamic_level_bytes(s.opts, 1)
	C.rocksdb_options_set_bytes_per_sync(s.opts, 1<<20)
	s.bbto = C.rocksdb_block_based_options_create()
	C.rocksdb_block_based_options_set_filter_policy(s.bbto, C.rocksdb_filterpolicy_create_bloom(10))
	cache := o.CacheBytes
	if cache <= 0 {
		cache = DefaultCacheBytes
	}
	s.cache = C.rocksdb_cache_create_lru(C.size_t(cache))
	C.rocksdb_block_based_options_set_block_cache(s.bbto, s.cache)
	C.rocksdb_options_set_block_based_table_factory(s.opts, s.bbto)
	if blob {
		s.name = "rocksdb-blob"
		C.rocksdb_options_set_enable_blob_files(s.opts, 1)
		C.rocksdb_options_set_min_blob_size(s.opts, ValueThreshold)
		C.rocksdb_options_set_enable_blob_gc(s.opts, 1)
		setBlobCache(s.opts, s.cache)
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
	s.cf = C.rocksdb_get_default_column_family_handle(s.db)
	return s, nil
}

func (s *rocksStore) Name() string { return s.name }

func bptr(b []byte) *C.char {
	if len(b) == 0 {
		return nil
	}
	return (*C.char)(unsafe.Pointer(&b[0]))
}

// packBufs keeps the buffers WriteBatch packs a batch into, between batches.
var packBufs = sync.Pool{New: func() any { return new([]byte) }}

// WriteBatch packs the pairs into one Go byte slice and hands it to
// rk_write_packed: one cgo crossing per batch, and no Go pointer to Go
// pointers passed (cgocheck), where a put per pair would cross once each.
func (s *rocksStore) WriteBatch(keys, vals [][]byte) error {
	if len(keys) != len(vals) {
		return fmt.Errorf("rocksdb: %d keys, %d values", len(keys), len(vals))
	}
	size := 0
	for i := range keys {
		if uint64(len(keys[i])) > math.MaxUint32 || uint64(len(vals[i])) > math.MaxUint32 {
			return errors.New("rocksdb: a key or value of 4 GiB or more")
		}
		size += 8 + len(keys[i]) + len(vals[i])
	}
	if size == 0 {
		return nil
	}
	pooled := packBufs.Get().(*[]byte)
	defer packBufs.Put(pooled)
	buf := (*pooled)[:0]
	if cap(buf) < size {
		buf = make([]byte, 0, size)
	}
	for i := range keys {
		buf = binary.LittleEndian.AppendUint32(buf, uint32(len(keys[i])))
		buf = binary.LittleEndian.AppendUint32(buf, uint32(len(vals[i])))
		buf = append(buf, keys[i]...)
		buf = append(buf, vals[i]...)
	}
	*pooled = buf
	var cerr *C.char
	rc := C.rk_write_packed(s.db, s.wo, (*C.char)(unsafe.Pointer(&buf[0])), C.size_t(len(buf)), C.size_t(len(keys)), &cerr)
	runtime.KeepAlive(buf)
	if err := rocksErr(cerr); err != nil {
		return err
	}
	if rc != 0 {
		return errors.New("rocksdb: packed batch malformed")
	}
	return nil
}

// Get copies the value into dst's spare capacity in one cgo call (a second one
// only if it does not fit).
func (s *rocksStore) Get(key, dst []byte) ([]byte, error) {
	dst = dst[:cap(dst)]
	for {
		var n C.size_t
		var cerr *C.char
		var dp *C.char
		if len(dst) > 0 {
			dp = (*C.char)(unsafe.Pointer(&dst[0]))
		}
		rc := C.rk_get_into(s.db, s.ro, bptr(key), C.size_t(len(key)), dp, C.size_t(len(dst)), &n, &cerr)
		runtime.KeepAlive(key)
		runtime.KeepAlive(dst)
		if err := rocksErr(cerr); err != nil {
			return nil, err
		}
		switch rc {
		case 0:
			return nil, ErrNotFound
		case 1:
			return dst[:int(n)], nil
		}
		dst = make([]byte, int(n))
	}
}

// MultiGet packs the keys into one Go slice and reads them with
// rk_multi_get_packed: one cgo crossing per batch (a second only when the
// values outgrow the pooled buffer), as sett's get_many.
func (s *rocksStore) MultiGet(keys [][]byte, fn func(i int, v []byte)) error {
	if len(keys) == 0 {
		return nil
	}
	kb := packBufs.Get().(*[]byte)
	defer packBufs.Put(kb)
	buf := (*kb)[:0]
	for _, k := range keys {
		buf = binary.LittleEndian.AppendUint32(buf, uint32(len(k)))
		buf = append(buf, k...)
	}
	*kb = buf
	vb := mgetBufs.Get().(*[]byte)
	defer mgetBufs.Put(vb)
	lens := make([]int64, len(keys))
	for {
		dst := (*vb)[:cap(*vb)]
		var need C.size_t
		var cerr *C.char
		rc := C.rk_multi_get_packed(s.db, s.cf, s.ro, (*C.char)(unsafe.Pointer(&buf[0])), C.size_t(len(buf)), C.size_t(len(keys)),
			bptr(dst), C.size_t(len(dst)), (*C.int64_t)(unsafe.Pointer(&lens[0])), &need, &cerr)
		runtime.KeepAlive(buf)
		runtime.KeepAlive(dst)
		if err := rocksErr(cerr); err != nil {
			return err
		}
		switch rc {
		case 0:
			off := int64(0)
			for i, n := range lens {
				if n < 0 {
					fn(i, nil)
					continue
				}
				fn(i, dst[off:off+n])
				off += n
			}
			return nil
		case -1:
			*vb = make([]byte, int(need))
		default:
			return errors.New("rocksdb: packed keys malformed")
		}
	}
}

// mgetBufs keeps MultiGet's value buffers between batches.
var mgetBufs = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// rocksIterBuf sizes the buffer of one rk_iter_fill call.
const rocksIterBuf = 256 << 10

// iterBufs keeps scan buffers between scans: a short scan (KVBench's 10-key
// prefix) must not pay for zeroing a fresh 256 KiB buffer.
var iterBufs = sync.Pool{New: func() any { b := make([]byte, rocksIterBuf); return &b }}

// scanFrom walks it from its current position, many items per cgo call;
// fn sees slices valid only during the call.
func (s *rocksStore) scanFrom(it *C.rocksdb_iterator_t, keysOnly bool, limit int, fn func(k, v []byte) bool) (int, error) {
	pooled := iterBufs.Get().(*[]byte)
	defer iterBufs.Put(pooled)
	buf := *pooled
	ko := C.int(0)
	if keysOnly {
		ko = 1
	}
	n := 0
	for n < limit {
		var count, used C.size_t
		rc := C.rk_iter_fill(it, ko, C.size_t(min(limit-n, 1<<20)), (*C.char)(unsafe.Pointer(&buf[0])), C.size_t(len(buf)), &count, &used)
		if rc < 0 {
			buf = make([]byte, int(used)*2)
			*pooled = buf
			continue
		}
		if count == 0 {
			break
		}
		at := 0
		for i := 0; i < int(count); i++ {
			kl := int(binary.LittleEndian.Uint32(buf[at:]))
			vl := int(binary.LittleEndian.Uint32(buf[at+4:]))
			k := buf[at+8 : at+8+kl]
			v := buf[at+8+kl : at+8+kl+vl]
			at += 8 + kl + vl
			n++
			if !fn(k, v) {
				return n, nil
			}
		}
	}
	var cerr *C.char
	C.rocksdb_iter_get_error(it, &cerr)
	return n, rocksErr(cerr)
}

func (s *rocksStore) Iterate(keysOnly bool, limit int, fn func(k, v []byte) bool) (int, error) {
	it := C.rocksdb_create_iterator(s.db, s.ro)
	defer C.rocksdb_iter_destroy(it)
	C.rocksdb_iter_seek_to_first(it)
	return s.scanFrom(it, keysOnly, limit, fn)
}

func (s *rocksStore) property(name string) (uint64, bool) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var v C.uint64_t
	if C.rocksdb_property_int(s.db, cname, &v) != 0 {
		return 0, false
	}
	return uint64(v), true
}

// WriteAccount is RocksDB's compaction stats since open (the table of
// rocksdb.cfstats-no-file-histogram: per level, Read, Write and W-Amp).
func (s *rocksStore) WriteAccount() (string, error) {
	cname := C.CString("rocksdb.cfstats-no-file-histogram")
	defer C.free(unsafe.Pointer(cname))
	v := C.rocksdb_property_value(s.db, cname)
	if v == nil {
		return "", fmt.Errorf("rocksdb: property rocksdb.cfstats-no-file-histogram unavailable")
	}
	defer C.rocksdb_free(unsafe.Pointer(v))
	return C.GoString(v), nil
}

// Backlog reads RocksDB's own properties: pending flushes and compactions.
func (s *rocksStore) Backlog() (bool, string, error) {
	names := []string{"rocksdb.mem-table-flush-pending", "rocksdb.num-running-flushes",
		"rocksdb.compaction-pending", "rocksdb.num-running-compactions", "rocksdb.estimate-pending-compaction-bytes"}
	idle := true
	desc := ""
	for _, n := range names {
		v, ok := s.property(n)
		if !ok {
			return false, "", fmt.Errorf("rocksdb: property %s unavailable", n)
		}
		if v != 0 {
			idle = false
		}
		desc += fmt.Sprintf("%s=%d ", n[len("rocksdb."):], v)
	}
	l0, _ := s.property("rocksdb.num-files-at-level0")
	return idle, desc + fmt.Sprintf("L0 files=%d", l0), nil
}

// Close flushes the memtables and syncs the WAL first, so that RocksDB ends
// populate in the same state as sett and Badger (data in tables, logs synced).
func (s *rocksStore) Close() error {
	var err error
	if s.db != nil && !s.readOnly {
		fo := C.rocksdb_flushoptions_create()
		C.rocksdb_flushoptions_set_wait(fo, 1)
		var cerr *C.char
		C.rocksdb_flush(s.db, fo, &cerr)
		C.rocksdb_flushoptions_destroy(fo)
		err = rocksErr(cerr)
		if err == nil {
			C.rocksdb_flush_wal(s.db, 1, &cerr)
			err = rocksErr(cerr)
		}
	}
	if s.db != nil {
		C.rocksdb_close(s.db)
		s.db = nil
	}
	s.free()
	return err
}

func (s *rocksStore) free() {
	if s.cf != nil {
		C.rocksdb_column_family_handle_destroy(s.cf)
		s.cf = nil
	}
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
