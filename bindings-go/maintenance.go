package sett

/*
#include <stdlib.h>
#include <sett.h>
*/
import "C"

import (
	"io"
	"os"
	"path/filepath"
	"runtime"
	"unsafe"
)

// Flush makes every write durable: the memtables are flushed to tables.
func (d *DB) Flush() error {
	return d.call(func(h *C.sett_db_t, cerr **C.sett_error_t) C.int { return C.sett_flush(h, cerr) })
}

// Flatten flushes the memtables and compacts everything into the last level.
func (d *DB) Flatten() error {
	return d.call(func(h *C.sett_db_t, cerr **C.sett_error_t) C.int { return C.sett_flatten(h, cerr) })
}

// DropAll deletes every key (files are removed, not rewritten).
func (d *DB) DropAll() error {
	return d.call(func(h *C.sett_db_t, cerr **C.sett_error_t) C.int { return C.sett_drop_all(h, cerr) })
}

// DropPrefix deletes every key starting with any of the prefixes. An empty
// prefix is ErrInvalidArgument (use DropAll).
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
// backup, as Badger's DB.Backup.
//
// The C ABI writes backups to a path only, so Backup writes a temporary file
// in os.TempDir() and copies it to w: it needs that much free space there, and
// nothing reaches w before the whole backup is written.
func (d *DB) Backup(w io.Writer, since uint64) (uint64, error) {
	dir, err := os.MkdirTemp("", "sett-backup-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "backup")
	next, err := d.BackupFile(path, since)
	if err != nil {
		return 0, err
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if _, err := io.Copy(w, f); err != nil {
		return 0, err
	}
	return next, nil
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
// It is Badger's DB.Load.
//
// The C ABI restores from a path only, so Restore first copies r into a
// temporary file in os.TempDir().
func (d *DB) Restore(r io.Reader) (uint64, error) {
	dir, err := os.MkdirTemp("", "sett-restore-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "backup")
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	_, err = io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, err
	}
	return d.RestoreFile(path)
}

// Stats are counts and sizes of a database (sett_stats_t).
type Stats struct {
	// Tables and bytes per level, L0 first (one entry per level in use).
	LevelTables, LevelBytes []uint64
	// Value-log files and their bytes.
	VlogFiles, VlogBytes uint64
	// Bytes in memtables.
	MemtableBytes uint64
	// Memtables waiting to be flushed.
	ImmutableMemtables uint64
	// Bytes of table indexes and bloom filters held in memory.
	IndexFilterBytes uint64
	// The last sequence number (version) given out.
	LastSeq uint64
	// Entries in tables (not counting memtables).
	TableEntries uint64
	// Write groups and batches written since open: batches/groups is the
	// group-commit factor.
	WriteGroups    uint64
	BatchesWritten uint64
	// Levels due for compaction and compactions in progress: the background
	// work has settled when both are 0 and ImmutableMemtables is 0.
	CompactionsPending uint64
	CompactionsRunning uint64
}

// Stats returns the database's counts and sizes.
func (d *DB) Stats() (Stats, error) {
	var cs C.sett_stats_t
	err := d.call(func(h *C.sett_db_t, cerr **C.sett_error_t) C.int { return C.sett_stats(h, &cs, cerr) })
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
		CompactionsPending: uint64(cs.compactions_pending),
		CompactionsRunning: uint64(cs.compactions_running),
	}
	for i := 0; i < n; i++ {
		st.LevelTables[i] = uint64(cs.level_tables[i])
		st.LevelBytes[i] = uint64(cs.level_bytes[i])
	}
	return st, nil
}
