package sett

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestValueLogGCGivesSpaceBack(t *testing.T) {
	// GC by hand: the background GC is off.
	db := openTempWith(t, &Options{ValueThreshold: 64, MemTableSize: 16 << 10, ValueLogFileSize: 16 << 10, ValueLogGCRatio: -1})
	v := make([]byte, 200)
	for round := 0; round < 4; round++ {
		for i := 0; i < 300; i++ {
			for j := range v {
				v[j] = byte('a' + round)
			}
			if err := db.Set([]byte(fmt.Sprintf("gc%04d", i)), v); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := db.RunValueLogGC(0); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("discard ratio 0: %v", err)
	}
	if err := db.Flatten(); err != nil { // rounds 0-2 become garbage
		t.Fatal(err)
	}
	before, _ := db.Stats()
	rounds := 0
	for {
		err := db.RunValueLogGC(0.5)
		if errors.Is(err, ErrNoRewrite) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if rounds++; rounds > 100 {
			t.Fatal("GC never ran out of work")
		}
	}
	after, _ := db.Stats()
	t.Logf("value log %d bytes in %d files before GC, %d bytes in %d files after %d rounds",
		before.VlogBytes, before.VlogFiles, after.VlogBytes, after.VlogFiles, rounds)
	if rounds == 0 || after.VlogBytes >= before.VlogBytes {
		t.Fatalf("GC gave nothing back: %d rounds, %d -> %d bytes", rounds, before.VlogBytes, after.VlogBytes)
	}
	for i := 0; i < 300; i++ {
		got, err := db.Get([]byte(fmt.Sprintf("gc%04d", i)))
		if err != nil || len(got) != 200 || got[0] != 'd' || got[199] != 'd' {
			t.Fatalf("key %d after GC: %d bytes %v", i, len(got), err)
		}
	}
}

func TestBackupToAWriterRestoresIntoAnEmptyDatabase(t *testing.T) {
	src := openTemp(t)
	big := bytes.Repeat([]byte("B"), 3000)
	for i := 0; i < 500; i++ {
		mustSet(t, src, fmt.Sprintf("k%04d", i), fmt.Sprintf("v%d", i))
	}
	_ = src.Set([]byte("big"), big)
	_ = src.Delete([]byte("k0007"))
	var full bytes.Buffer
	since, err := src.Backup(&full, 0)
	if err != nil {
		t.Fatal(err)
	}
	if since == 0 || full.Len() == 0 {
		t.Fatalf("backup: %d bytes, next since %d", full.Len(), since)
	}
	mustSet(t, src, "later", "x")
	var incr bytes.Buffer
	if _, err := src.Backup(&incr, since); err != nil {
		t.Fatal(err)
	}

	dst := openTemp(t)
	n, err := dst.Restore(bytes.NewReader(full.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if n != 500 { // 499 keys plus big
		t.Fatalf("restored %d entries, want 500", n)
	}
	if mustGet(t, dst, "k0499") != "v499" || mustGet(t, dst, "big") != string(big) {
		t.Fatal("restored values")
	}
	if _, err := dst.Get([]byte("k0007")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a deleted key came back: %v", err)
	}
	if _, err := dst.Get([]byte("later")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a write after the backup is in it: %v", err)
	}
	if _, err := dst.Restore(bytes.NewReader(incr.Bytes())); err != nil {
		t.Fatal(err)
	}
	if mustGet(t, dst, "later") != "x" {
		t.Fatal("incremental backup")
	}
	if _, err := dst.Restore(bytes.NewReader([]byte("not a backup at all"))); err == nil {
		t.Fatal("restoring garbage succeeded")
	}
}

func TestBackupFileAndRestoreFile(t *testing.T) {
	src := openTemp(t)
	mustSet(t, src, "a", "1")
	path := filepath.Join(t.TempDir(), "full.backup")
	if _, err := src.BackupFile(path, 0); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path); err != nil || st.Size() == 0 {
		t.Fatalf("backup file: %v", err)
	}
	dst := openTemp(t)
	if n, err := dst.RestoreFile(path); err != nil || n != 1 {
		t.Fatalf("restore: %d %v", n, err)
	}
	if mustGet(t, dst, "a") != "1" {
		t.Fatal("restored value")
	}
	if _, err := dst.RestoreFile(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, ErrIO) {
		t.Fatalf("restoring a missing file: %v", err)
	}
}

func TestDropPrefixAndDropAll(t *testing.T) {
	db := openTemp(t)
	for _, k := range []string{"a/1", "a/2", "b/1", "c/1"} {
		mustSet(t, db, k, "v")
	}
	if err := db.DropPrefix([]byte("a/"), []byte("b/")); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a/1", "a/2", "b/1"} {
		if _, err := db.Get([]byte(k)); !errors.Is(err, ErrNotFound) {
			t.Fatalf("%s after DropPrefix: %v", k, err)
		}
	}
	if mustGet(t, db, "c/1") != "v" {
		t.Fatal("a key outside the prefixes was dropped")
	}
	if err := db.DropPrefix(nil); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("empty prefix: %v", err)
	}
	if err := db.DropAll(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Get([]byte("c/1")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after DropAll: %v", err)
	}
	mustSet(t, db, "new", "w")
	if mustGet(t, db, "new") != "w" {
		t.Fatal("write after DropAll")
	}
}

func TestStatsCountTablesAndSettleAfterCompactions(t *testing.T) {
	db, err := Open(t.TempDir(), &Options{ValueThreshold: 64, MemTableSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	const n = 4000
	val := bytes.Repeat([]byte("v"), 100)
	for i := 0; i < n; i++ {
		if err := db.Set([]byte(fmt.Sprintf("key%06d", i)), val); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	// 4000 x ~130 B over 64 KiB memtables: several flushes, so L0 reaches its
	// compaction trigger; wait for the background work to settle.
	deadline := time.Now().Add(30 * time.Second)
	var st Stats
	for {
		if st, err = db.Stats(); err != nil {
			t.Fatal(err)
		}
		if st.CompactionsPending == 0 && st.CompactionsRunning == 0 && st.ImmutableMemtables == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("background work never settled: %+v", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(st.LevelTables) < 2 || len(st.LevelTables) != len(st.LevelBytes) {
		t.Fatalf("levels: %+v", st)
	}
	var tables, tableBytes uint64
	for i := range st.LevelTables {
		tables += st.LevelTables[i]
		tableBytes += st.LevelBytes[i]
	}
	if tables == 0 || tableBytes == 0 || st.TableEntries != n {
		t.Fatalf("want %d entries in tables: %+v", n, st)
	}
	if st.VlogFiles == 0 || st.VlogBytes < n*100 || st.LastSeq < n || st.BatchesWritten < n || st.WriteGroups == 0 {
		t.Fatalf("value log or counters: %+v", st)
	}
	if err := db.Flatten(); err != nil {
		t.Fatal(err)
	}
	st, _ = db.Stats()
	for level := 0; level < len(st.LevelTables)-1; level++ {
		if st.LevelTables[level] != 0 {
			t.Fatalf("after Flatten, level %d still has %d tables", level, st.LevelTables[level])
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}
