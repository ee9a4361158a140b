package sett

/*
#include <stdlib.h>
#include <sett.h>
*/
import "C"

import (
	"time"
	"unsafe"
)

// Compression is a codec for table data blocks (index and filter blocks and
// the value log are never compressed).
type Compression int

const (
	// CompressionNone stores blocks as they are: sett's default, and the
	// zero value.
	CompressionNone Compression = C.SETT_COMPRESSION_NONE
	// CompressionLZ4 compresses blocks with LZ4 (fast, about 2x on text).
	CompressionLZ4 Compression = C.SETT_COMPRESSION_LZ4
	// CompressionZSTD compresses blocks with zstd at ZSTDCompressionLevel.
	CompressionZSTD Compression = C.SETT_COMPRESSION_ZSTD
)

// Options of Open. The zero value of a field keeps sett's default (given per
// field); Open(dir, nil) opens with every default. Out-of-range values are
// refused by Open with ErrInvalidOption naming the option. The names follow
// Badger's Options where sett has the same setting.
type Options struct {
	// ValueThreshold: values of at least this many bytes go to the value log,
	// smaller ones stay in the LSM tree (default 1024).
	ValueThreshold int
	// MemTableSize: bytes of one memtable (default 16 MiB).
	MemTableSize int
	// NumMemtables: memtables held at most, the active one plus those waiting
	// to be flushed (default 4).
	NumMemtables int
	// BlockSize: SST block size in bytes, before compression (default 4096).
	BlockSize int
	// Compression: codec of table data blocks on every level that
	// CompressionPerLevel does not name (default CompressionNone). A block
	// that does not shrink by an eighth is stored as it is.
	Compression Compression
	// CompressionPerLevel: codec per level, RocksDB style: entry N for tables
	// written to level N, the last entry for every deeper level; empty (the
	// default) means Compression everywhere. At most MaxLevels entries. A
	// common choice: {CompressionNone, CompressionNone, CompressionLZ4,
	// CompressionZSTD}.
	CompressionPerLevel []Compression
	// ZSTDCompressionLevel: zstd level, 1 to 22 (default 3), wherever zstd is used.
	ZSTDCompressionLevel int
	// BloomBitsPerKey: bloom filter bits per key (default 10). A negative
	// value builds no bloom filters (C: 0).
	BloomBitsPerKey int
	// CacheSize: the memory budget for reading, in bytes (default 256 MiB, at
	// least 1 MiB): one cache holds table indexes and bloom filters and the
	// decompressed blocks of compressed tables (Badger's IndexCacheSize and
	// BlockCacheSize in one). Uncompressed blocks are read from the OS page
	// cache and not counted. Stats reports its capacity and usage.
	CacheSize int64
	// BaseTableSize: target size of one SST in bytes (default 64 MiB).
	BaseTableSize int64
	// BaseLevelSize: target size of level 1 in bytes (default 256 MiB).
	BaseLevelSize int64
	// LevelSizeMultiplier: size ratio between levels (default 10).
	LevelSizeMultiplier int
	// LevelDynamic: size levels from the last one up, as RocksDB's
	// level_compaction_dynamic_level_bytes: L0 compacts into the highest
	// level in use and the levels above it stay empty (default false).
	LevelDynamic bool
	// MaxLevels: number of levels, L0 included (default 7).
	MaxLevels int
	// NumLevelZeroTables: L0 tables that start a compaction (default 64).
	NumLevelZeroTables int
	// NumLevelZeroTablesSlowdown: L0 tables at which writes slow down
	// (default 96; Badger has no such setting).
	NumLevelZeroTablesSlowdown int
	// NumLevelZeroTablesStall: L0 tables at which writes stop until a
	// compaction makes room (default 128).
	NumLevelZeroTablesStall int
	// NumCompactors: background compaction threads (default 1).
	NumCompactors int
	// ValueLogFileSize: bytes of a value-log file before a new one starts
	// (default 1 GiB).
	ValueLogFileSize int64
	// ValueLogGCRatio: garbage share of a sealed value-log file at which the
	// background GC rewrites and deletes it (default 0.5, must be below 1). A
	// negative value turns the background GC off; RunValueLogGC works either way.
	ValueLogGCRatio float64
	// ValueLogGCIdleRatio: the garbage share at which the background GC
	// collects a sealed file once the database has had no writes for a
	// second, when below ValueLogGCRatio (default 0.25): rewrites then delay
	// no writer, and packed live values take less disk and page cache; files
	// are judged by walks over the tables, not a lookup per entry. A
	// negative value keeps ValueLogGCRatio while idle too.
	ValueLogGCIdleRatio float64
	// ValueLogGCRate: bytes per second the background GC reads and rewrites
	// at most while writes run (default 64 MiB/s); with no write for a second
	// it runs at device speed, reads or not. A negative value removes the
	// limit.
	ValueLogGCRate int64
	// ValueLogGCWriteFactor: while writes run, the GC's limit is raised to
	// this many times the rate at which they append to the value log, when
	// that is above ValueLogGCRate (default 4). A negative value leaves
	// ValueLogGCRate alone as the limit.
	ValueLogGCWriteFactor int
	// MaxKeySize: largest key in bytes (default 65000).
	MaxKeySize int
	// MaxValueSize: largest value in bytes (default 1 GiB).
	MaxValueSize int
	// MaxTxnSize: largest transaction (or batch) in bytes written (default
	// about 9.6 MiB).
	MaxTxnSize int
	// SyncWrites: fsync the WAL and value log once per write group, so that an
	// acknowledged write survives a machine crash (default false: it survives
	// a process crash).
	SyncWrites bool
	// ReadOnly: open read-only; several read-only opens, also from other
	// processes, may share a directory. Writes return ErrReadOnly (default
	// false).
	ReadOnly bool
	// ChangeFeedHistoryBytes: bytes of recent changes kept in memory so that
	// DB.Subscribe can start from a past version (default 4 MiB; negative
	// keeps none).
	ChangeFeedHistoryBytes int
	// MergeOperator: the built-in merge operator that DB.Merge and the other
	// Merge calls fold operands with, by name: MergeU64Add, MergeAppend or
	// MergeMax (empty, the default: none, and merges fail with
	// ErrMergeOperatorMissing). The database records it: an Open with another
	// one fails with ErrMergeOperatorMismatch. Not in the table of options
	// (core takes code there). An unknown name is ErrInvalidArgument.
	MergeOperator string
	// EncryptionKey: the 32-byte AES-256 master key of encryption at rest
	// (default empty: not encrypted). Every file is encrypted with data keys
	// sealed under it. A database created with a key must always be opened
	// with it: a wrong key fails Open with ErrWrongEncryptionKey, none with
	// ErrEncryptionKeyRequired, a key for a plain database with
	// ErrNotEncrypted. Any other length than 32 fails Open with
	// ErrInvalidArgument. The bytes are copied for the open only.
	EncryptionKey []byte
	// EncryptionKeyRotationDuration: how old the newest data key may get
	// before a new one is made for the files created from then on (default
	// 10 days; negative: never by age, only DB.RotateEncryptionKey).
	// Rounded up to whole milliseconds.
	EncryptionKeyRotationDuration time.Duration
}

// cOptions builds the C options; the caller frees them with
// sett_options_free. A negative size is refused here, before it would wrap
// around in size_t.
func (o *Options) cOptions() (*C.sett_options_t, error) {
	co := C.sett_options_new()
	if o == nil {
		return co, nil
	}
	var firstErr error
	check := func(name string, v int64) bool {
		if v < 0 && firstErr == nil {
			firstErr = argError(C.SETT_INVALID_OPTION, "option %s is negative (%d)", name, v)
		}
		return v > 0
	}
	// Each setter only fails for a NULL options pointer, which co is not;
	// range checks happen in sett_open.
	if check("ValueThreshold", int64(o.ValueThreshold)) {
		C.sett_options_set_value_threshold(co, C.size_t(o.ValueThreshold))
	}
	if check("MemTableSize", int64(o.MemTableSize)) {
		C.sett_options_set_memtable_size(co, C.size_t(o.MemTableSize))
	}
	if check("NumMemtables", int64(o.NumMemtables)) {
		C.sett_options_set_max_memtables(co, C.size_t(o.NumMemtables))
	}
	if check("BlockSize", int64(o.BlockSize)) {
		C.sett_options_set_block_size(co, C.size_t(o.BlockSize))
	}
	if o.Compression != CompressionNone {
		if rc := C.sett_options_set_compression(co, C.int(o.Compression)); rc != C.SETT_OK && firstErr == nil {
			firstErr = argError(C.SETT_INVALID_OPTION, "option Compression: unknown codec %d", int(o.Compression))
		}
	}
	if len(o.CompressionPerLevel) > 0 {
		types := make([]C.int, len(o.CompressionPerLevel))
		for i, c := range o.CompressionPerLevel {
			types[i] = C.int(c)
		}
		// types is Go memory holding no Go pointers, read by C during the call only.
		rc := C.sett_options_set_compression_per_level(co, &types[0], C.size_t(len(types)))
		if rc != C.SETT_OK && firstErr == nil {
			firstErr = argError(C.SETT_INVALID_OPTION, "option CompressionPerLevel: unknown codec in %v", o.CompressionPerLevel)
		}
	}
	if check("ZSTDCompressionLevel", int64(o.ZSTDCompressionLevel)) {
		C.sett_options_set_zstd_level(co, C.int(o.ZSTDCompressionLevel))
	}
	if o.BloomBitsPerKey < 0 {
		C.sett_options_set_bloom_bits_per_key(co, 0)
	} else if o.BloomBitsPerKey > 0 {
		C.sett_options_set_bloom_bits_per_key(co, C.size_t(o.BloomBitsPerKey))
	}
	if check("CacheSize", o.CacheSize) {
		C.sett_options_set_cache_size(co, C.uint64_t(o.CacheSize))
	}
	if check("BaseTableSize", o.BaseTableSize) {
		C.sett_options_set_table_size(co, C.uint64_t(o.BaseTableSize))
	}
	if check("BaseLevelSize", o.BaseLevelSize) {
		C.sett_options_set_level_base_size(co, C.uint64_t(o.BaseLevelSize))
	}
	if check("LevelSizeMultiplier", int64(o.LevelSizeMultiplier)) {
		C.sett_options_set_level_multiplier(co, C.uint64_t(o.LevelSizeMultiplier))
	}
	if check("MaxLevels", int64(o.MaxLevels)) {
		C.sett_options_set_num_levels(co, C.size_t(o.MaxLevels))
	}
	if check("NumLevelZeroTables", int64(o.NumLevelZeroTables)) {
		C.sett_options_set_l0_compaction_trigger(co, C.size_t(o.NumLevelZeroTables))
	}
	if check("NumLevelZeroTablesSlowdown", int64(o.NumLevelZeroTablesSlowdown)) {
		C.sett_options_set_l0_slowdown_trigger(co, C.size_t(o.NumLevelZeroTablesSlowdown))
	}
	if check("NumLevelZeroTablesStall", int64(o.NumLevelZeroTablesStall)) {
		C.sett_options_set_l0_stop_trigger(co, C.size_t(o.NumLevelZeroTablesStall))
	}
	if check("NumCompactors", int64(o.NumCompactors)) {
		C.sett_options_set_compaction_threads(co, C.size_t(o.NumCompactors))
	}
	if check("ValueLogFileSize", o.ValueLogFileSize) {
		C.sett_options_set_vlog_file_size(co, C.uint64_t(o.ValueLogFileSize))
	}
	if o.ValueLogGCRatio < 0 {
		C.sett_options_set_vlog_gc_ratio(co, 0)
	} else if o.ValueLogGCRatio > 0 {
		C.sett_options_set_vlog_gc_ratio(co, C.double(o.ValueLogGCRatio))
	}
	if o.ValueLogGCIdleRatio < 0 {
		C.sett_options_set_vlog_gc_idle_ratio(co, 0)
	} else if o.ValueLogGCIdleRatio > 0 {
		C.sett_options_set_vlog_gc_idle_ratio(co, C.double(o.ValueLogGCIdleRatio))
	}
	if o.ValueLogGCRate < 0 {
		C.sett_options_set_vlog_gc_rate(co, 0)
	} else if o.ValueLogGCRate > 0 {
		C.sett_options_set_vlog_gc_rate(co, C.uint64_t(o.ValueLogGCRate))
	}
	if o.ValueLogGCWriteFactor < 0 {
		C.sett_options_set_vlog_gc_write_factor(co, 0)
	} else if o.ValueLogGCWriteFactor > 0 {
		C.sett_options_set_vlog_gc_write_factor(co, C.uint32_t(o.ValueLogGCWriteFactor))
	}
	if check("MaxKeySize", int64(o.MaxKeySize)) {
		C.sett_options_set_max_key_size(co, C.size_t(o.MaxKeySize))
	}
	if check("MaxValueSize", int64(o.MaxValueSize)) {
		C.sett_options_set_max_value_size(co, C.size_t(o.MaxValueSize))
	}
	if check("MaxTxnSize", int64(o.MaxTxnSize)) {
		C.sett_options_set_max_txn_size(co, C.size_t(o.MaxTxnSize))
	}
	if o.ChangeFeedHistoryBytes < 0 {
		C.sett_options_set_change_feed_history_bytes(co, 0)
	} else if o.ChangeFeedHistoryBytes > 0 {
		C.sett_options_set_change_feed_history_bytes(co, C.size_t(o.ChangeFeedHistoryBytes))
	}
	C.sett_options_set_level_dynamic(co, cbool(o.LevelDynamic))
	if o.MergeOperator != "" && firstErr == nil {
		name := C.CString(o.MergeOperator)
		rc := C.sett_options_set_merge_operator(co, name)
		C.free(unsafe.Pointer(name))
		if rc != C.SETT_OK {
			firstErr = argError(rc, "unknown merge operator %q: the built-ins are %q, %q and %q",
				o.MergeOperator, MergeU64Add, MergeAppend, MergeMax)
		}
	}
	C.sett_options_set_sync_writes(co, cbool(o.SyncWrites))
	C.sett_options_set_read_only(co, cbool(o.ReadOnly))
	if o.EncryptionKeyRotationDuration < 0 {
		C.sett_options_set_encryption_key_rotation_ms(co, 0)
	} else if o.EncryptionKeyRotationDuration > 0 {
		ms := (o.EncryptionKeyRotationDuration + time.Millisecond - 1) / time.Millisecond
		C.sett_options_set_encryption_key_rotation_ms(co, C.uint64_t(ms))
	}
	if len(o.EncryptionKey) > 0 {
		// The key is Go memory holding no Go pointers, copied by C during the
		// call; a wrong length is refused there, naming the length only.
		rc := C.sett_options_set_encryption_key(co, (*C.uint8_t)(unsafe.Pointer(&o.EncryptionKey[0])), C.size_t(len(o.EncryptionKey)))
		if rc != C.SETT_OK && firstErr == nil {
			firstErr = argError(C.SETT_INVALID_ARGUMENT, "option EncryptionKey is %d bytes, not 32", len(o.EncryptionKey))
		}
	}
	if firstErr != nil {
		C.sett_options_free(co)
		return nil, firstErr
	}
	return co, nil
}

// The built-in merge operators' names, for Options.MergeOperator.
const (
	// MergeU64Add: values and operands are unsigned 64-bit counters, 8 bytes
	// little-endian (binary.LittleEndian); a merge adds them, wrapping at 2^64.
	// An operand of another length makes reads of its key fail with
	// ErrMergeFailed until a Set replaces it.
	MergeU64Add = "sett.u64_add"
	// MergeAppend: a merge appends the operand to the value.
	MergeAppend = "sett.append"
	// MergeMax: a merge keeps the bytewise largest of the value and the operand.
	MergeMax = "sett.max"
)

func cbool(b bool) C.uint32_t {
	if b {
		return 1
	}
	return 0
}
