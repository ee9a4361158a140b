package sett

/*
#include <stdlib.h>
#include <sett.h>
*/
import "C"

import (
	"io"
	"runtime"
	"time"
	"unsafe"
)

// Flush makes every write durable: the memtables are flushed to tables.
func (d *DB) Flush() error {
	return d.call(func(h *C.sett_db_t, cerr **C.sett_error_t) C.int { return C.sett_flush(h, cerr) })
}

// RotateEncryptionKey makes a new data key for an encrypted database and
// returns its id: files created from now on are encrypted with it, older
// files keep their keys (compaction and value-log GC move their data to
// newer keys as they rewrite it). The key is durable when this returns.
// ErrInvalidArgument on a database opened without an EncryptionKey,
// ErrReadOnly on a read-only one.
func (d *DB) RotateEncryptionKey() (uint32, error) {
	var id C.uint32_t
	err := d.call(func(h *C.sett_db_t, cerr **C.sett_error_t) C.int {
		return C.sett_rotate_encryption_key(h, &id, cerr)
	})
	return uint32(id), err
}

// Flatten flushes the memtables and compacts everything into the last level.
func (d *DB) Flatten() error {
	return d.call(func(h *C.sett_db_t, cerr **C.sett_error_t) C.int { return C.sett_flatten(h, cerr) })
}

// DropAll deletes every key (files are removed, not rewritten).
func (d *DB) DropAll() error {
	return d.call(func(h *C.sett_db_t, cerr **C.sett_error_t) C.int { return C.sett_drop_all(h, cerr) })
}

// DeleteRange deletes every key in [start, end) with one range tombstone
// (RocksDB's DeleteRange), however many keys the range holds. It is a write
// like Set: ordered, atomic, durable as SyncWrites makes it, and other
// writers do not wait for it; snapshots taken before it still see the keys.
// Compaction reclaims the space later (Flatten at once). An empty end means
// no upper bound; otherwise start < end is required (ErrInvalidArgument).
// A read-write transaction that read any key and commits after a range
// delete committed past its start fails with ErrConflict.
func (d *DB) DeleteRange(start, end []byte) error {
	return storeDeleteRange(d, start, end)
}

// DropPrefix deletes every key starting with any of the prefixes, each with
// one range delete (atomic; writers do not wait). An empty prefix is
// ErrInvalidArgument (use DropAll).
func (d *DB) DropPrefix(prefixes ...[]byte) error {
	for _, p := range prefixes {
		if len(p) == 0 {
			return argError(C.SETT_INVALID_ARGUMENT, "DropPrefix with an empty prefix (use DropAll)")
		}
		err := d.call(func(h *C.sett_db_t, cerr **C.sett_error_t) C.int {
			rc := C.sett_drop_prefix(h, ptr(p), C.size_t(len(p)), cerr)
			runtime.KeepAlive(p)
			return rc
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// call runs one C call on the handle under the read lock.
func (d *DB) call(f func(h *C.sett_db_t, cerr **C.sett_error_t) C.int) error {
	h, err := d.handle()
	if err != nil {
		return err
	}
	defer d.mu.RUnlock()
	var cerr *C.sett_error_t
	rc := f(h, &cerr)
	return status(rc, cerr)
}

// RunValueLogGC runs one round of value-log garbage collection: the value-log
// file with the largest share of garbage is rewritten (its live values moved)
// and deleted if that share is at least discardRatio, in (0, 1); a file that is
// all garbage is deleted outright. It returns ErrNoRewrite when no file had
// that much garbage. As with Badger, call it in a loop:
//
//	for db.RunValueLogGC(0.5) == nil {
//	}
func (d *DB) RunValueLogGC(discardRatio float64) error {
	var collected C.int
	err := d.call(func(h *C.sett_db_t, cerr **C.sett_error_t) C.int {
		return C.sett_run_value_log_gc(h, C.double(discardRatio), &collected, cerr)
	})
	if err != nil {
		return err
	}
	if collected == 0 {
		return ErrNoRewrite
	}
	return nil
}

// BackupFile writes a backup to the file at path (created or truncated, then
// synced): the live entries if since is 0, else every version after since. It
// returns the since of the next incremental backup.
func (d *DB) BackupFile(path string, since uint64) (uint64, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var next C.uint64_t
	err := d.call(func(h *C.sett_db_t, cerr **C.sett_error_t) C.int {
		return C.sett_backup(h, cpath, C.uint64_t(since), &next, cerr)
	})
	return uint64(next), err
}

// Backup writes a backup to w, as BackupFile (since 0: the live entries; else
// every version after since), and returns the since of the next incremental
// backup, as Badger's DB.Backup. The bytes go to w as they are made (chunks of
// about 1 MiB), through sett_backup_to. An error from w stops the backup: the
// error returned wraps it and ErrIO, and the database is not changed. w is
// called on the calling goroutine and must not close the database.
func (d *DB) Backup(w io.Writer, since uint64) (uint64, error) {
	return d.backupTo(w, since)
}

// RestoreFile applies the backup in the file at path (a full backup needs an
// empty database) and returns the number of entries applied.
func (d *DB) RestoreFile(path string) (uint64, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var entries C.uint64_t
	err := d.call(func(h *C.sett_db_t, cerr **C.sett_error_t) C.int {
		return C.sett_restore(h, cpath, &entries, cerr)
	})
	return uint64(entries), err
}

// Restore applies a backup read from r (written by Backup or BackupFile; a full
// backup needs an empty database) and returns the number of entries applied.
// It is Badger's DB.Load, reading r as it goes through sett_restore_from. When
// r fails (the error returned wraps it and ErrIO) or the stream is damaged or
// cut (ErrCorruption), the stream is applied in chunks of about 1 MiB as it is
// read, so the entries of the chunks before may be in the database: DropAll
// before restoring a full backup again.
func (d *DB) Restore(r io.Reader) (uint64, error) {
	return d.restoreFrom(r)
}

// Stats are counts and sizes of a database (sett_stats_ex_t).
type Stats struct {
	// Tables and bytes per level, L0 first (one entry per level in use).
	LevelTables, LevelBytes []uint64
	// Value-log files and their bytes.
	VlogFiles, VlogBytes uint64
	// Bytes in memtables.
	MemtableBytes uint64
	// Memtables waiting to be flushed.
	ImmutableMemtables uint64
	// Bytes held by the tables themselves: key ranges and the indexes and
	// filters pinned in the cache (those loaded through it count in CacheUsage).
	IndexFilterBytes uint64
	// The memory budget (Options.CacheSize) and the bytes its cache holds
	// now, never above it; of those, the indexes and filters pinned by tables.
	CacheCapacity, CacheUsage, CachePinnedBytes uint64
	// Lookups of indexes and filters not pinned: found in the cache, or loaded.
	CacheIndexFilterHits, CacheIndexFilterMisses uint64
	// Reads of compressed data blocks: found decompressed, or decompressed.
	CacheDataHits, CacheDataMisses uint64
	// The last sequence number (version) given out.
	LastSeq uint64
	// Entries in tables (not counting memtables).
	TableEntries uint64
	// Write groups and batches written since open: batches/groups is the
	// group-commit factor.
	WriteGroups    uint64
	BatchesWritten uint64
	// WALSyncs: fsyncs of the WAL since open (only with SyncWrites).
	WALSyncs uint64
	// Levels due for compaction and compactions in progress: the background
	// work has settled when both are 0 and ImmutableMemtables is 0.
	CompactionsPending uint64
	CompactionsRunning uint64
	// Value-log GC since open, background and RunValueLogGC: files whose live
	// values were moved before they were deleted, files deleted without a
	// rewrite, bytes given back to the file system, and the time spent.
	GCFilesRewritten uint64
	GCFilesDeleted   uint64
	GCBytesReclaimed uint64
	GCTime           time.Duration
	// The background GC's backlog: value-log files whose garbage share reached
	// the GC ratio, and their bytes (0 when background GC is off). A benchmark
	// waits for it as for CompactionsPending before it measures reads.
	GCPendingFiles uint64
	GCPendingBytes uint64
	// Value-log files in which GC found a damaged live entry: each is kept,
	// left out of later GC rounds while the database is open, and reported by
	// Verify with its file and offset.
	GCDamagedFiles uint64
	// Where the writes went since open, per level (L0 first): bytes of tables
	// written into it (flushes into L0, compactions into the others; a table
	// moved down whole is not written again) and bytes of tables that
	// compactions into it read. With WALBytesWritten and GCBytesMoved they
	// break down the device's writes, as RocksDB's compaction stats do.
	LevelBytesWritten, LevelBytesRead []uint64
	// Bytes appended to the WAL since open.
	WALBytesWritten uint64
	// Bytes of live values the value-log GC moved (appended again) since open.
	GCBytesMoved uint64
}

// Stats returns the database's counts and sizes.
func (d *DB) Stats() (Stats, error) {
	var cs C.sett_stats_ex_t
	cs.size = C.size_t(unsafe.Sizeof(cs))
	err := d.call(func(h *C.sett_db_t, cerr **C.sett_error_t) C.int { return C.sett_stats_ex(h, &cs, cerr) })
	if err != nil {
		return Stats{}, err
	}
	n := min(int(cs.num_levels), int(C.SETT_MAX_LEVELS))
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
		WALSyncs:           uint64(cs.wal_syncs),
		CompactionsPending: uint64(cs.compactions_pending),
		CompactionsRunning: uint64(cs.compactions_running),
		GCFilesRewritten:   uint64(cs.gc_files_rewritten),
		GCFilesDeleted:     uint64(cs.gc_files_deleted),
		GCBytesReclaimed:   uint64(cs.gc_bytes_reclaimed),
		GCTime:             time.Duration(cs.gc_micros) * time.Microsecond,
		GCPendingFiles:     uint64(cs.gc_pending_files),
		GCPendingBytes:     uint64(cs.gc_pending_bytes),

		CacheCapacity:          uint64(cs.cache_capacity),
		CacheUsage:             uint64(cs.cache_usage),
		CachePinnedBytes:       uint64(cs.cache_pinned_bytes),
		CacheIndexFilterHits:   uint64(cs.cache_index_filter_hits),
		CacheIndexFilterMisses: uint64(cs.cache_index_filter_misses),
		CacheDataHits:          uint64(cs.cache_data_hits),
		CacheDataMisses:        uint64(cs.cache_data_misses),
		GCDamagedFiles:         uint64(cs.gc_damaged_files),
		LevelBytesWritten:      make([]uint64, n),
		LevelBytesRead:         make([]uint64, n),
		WALBytesWritten:        uint64(cs.wal_bytes_written),
		GCBytesMoved:           uint64(cs.gc_bytes_moved),
	}
	for i := 0; i < n; i++ {
		st.LevelTables[i] = uint64(cs.level_tables[i])
		st.LevelBytes[i] = uint64(cs.level_bytes[i])
		st.LevelBytesWritten[i] = uint64(cs.level_bytes_written[i])
		st.LevelBytesRead[i] = uint64(cs.level_bytes_read[i])
	}
	return st, nil
}

// VerifyReport is what Verify checked (sett_verify_report_t).
type VerifyReport struct {
	// Tables whose every block checksum and format were checked, and blocks.
	Tables, Blocks uint64
	// Entries (all versions) walked in memtables and tables.
	Entries uint64
	// Value-log entries read back and checked through their pointers.
	Values uint64
}

// Verify checks every checksum of the database: each table block, and each
// value-log entry that a live version points to. The first damage found is
// ErrCorruption, its message naming the file and offset. The database is not
// changed and stays usable.
func (d *DB) Verify() (VerifyReport, error) {
	var r C.sett_verify_report_t
	r.size = C.size_t(unsafe.Sizeof(r))
	err := d.call(func(h *C.sett_db_t, cerr **C.sett_error_t) C.int { return C.sett_verify(h, &r, cerr) })
	if err != nil {
		return VerifyReport{}, err
	}
	return VerifyReport{
		Tables:  uint64(r.tables),
		Blocks:  uint64(r.blocks),
		Entries: uint64(r.entries),
		Values:  uint64(r.values),
	}, nil
}

// CheckpointReport is what Checkpoint did (sett_checkpoint_report_t).
type CheckpointReport struct {
	// Files hard-linked (tables and sealed value-log files) and their bytes,
	// shared with the source rather than written again.
	FilesLinked, BytesLinked uint64
	// Files copied (WALs of a read-only DB, files that could not be linked
	// because the target is on another file system) and the bytes written.
	FilesCopied, BytesCopied uint64
	// Wall time of the call.
	Elapsed time.Duration
}

// Checkpoint makes an openable copy of the database in dir, which must not
// exist (its parent must), while other goroutines keep writing: tables and
// sealed value-log files are hard-linked, so it costs about a flush and little
// disk. The copy holds every write acknowledged before the call; Open it as a
// database of its own. An existing dir is ErrInvalidArgument and changes
// nothing. An interrupted checkpoint leaves a directory holding
// CHECKPOINT-INCOMPLETE, which Open refuses with ErrCorruption.
func (d *DB) Checkpoint(dir string) (CheckpointReport, error) {
	cdir := C.CString(dir)
	defer C.free(unsafe.Pointer(cdir))
	var r C.sett_checkpoint_report_t
	r.size = C.size_t(unsafe.Sizeof(r))
	err := d.call(func(h *C.sett_db_t, cerr **C.sett_error_t) C.int {
		return C.sett_checkpoint(h, cdir, &r, cerr)
	})
	if err != nil {
		return CheckpointReport{}, err
	}
	return CheckpointReport{
		FilesLinked: uint64(r.files_linked),
		BytesLinked: uint64(r.bytes_linked),
		FilesCopied: uint64(r.files_copied),
		BytesCopied: uint64(r.bytes_copied),
		Elapsed:     time.Duration(r.elapsed_micros) * time.Microsecond,
	}, nil
}
