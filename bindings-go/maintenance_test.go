package sett

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
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
	// Where the writes went: flushes into L0, flatten's merges, the WAL, the GC's moves.
	var compactionRead uint64
	for _, b := range after.LevelBytesRead {
		compactionRead += b
	}
	if len(after.LevelBytesWritten) != len(after.LevelBytes) || after.LevelBytesWritten[0] == 0 ||
		compactionRead == 0 || after.WALBytesWritten == 0 || (after.GCFilesRewritten > 0) != (after.GCBytesMoved > 0) {
		t.Fatalf("write counts: %+v", after)
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

// failingWriter takes `room` bytes, then fails.
type failingWriter struct {
	room  int
	taken int
}

var errDiskFull = errors.New("test writer: disk full")

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.taken+len(p) > w.room {
		return 0, errDiskFull
	}
	w.taken += len(p)
	return len(p), nil
}

// failingReader hands out r's bytes until `at`, then fails.
type failingReader struct {
	r  io.Reader
	at int
	n  int
}

var errNetworkGone = errors.New("test reader: connection reset")

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n >= f.at {
		return 0, errNetworkGone
	}
	if len(p) > f.at-f.n {
		p = p[:f.at-f.n]
	}
	k, err := f.r.Read(p)
	f.n += k
	return k, err
}

func backupSource(t *testing.T) (*DB, map[string]string) {
	src := openTemp(t)
	want := map[string]string{}
	for i := 0; i < 3000; i++ {
		k := fmt.Sprintf("k%05d", i)
		v := strings.Repeat(string(rune('a'+i%26)), 10+i%700)
		mustSet(t, src, k, v)
		want[k] = v
	}
	return src, want
}

func TestBackupStreamsToAWriterThatFailsMidwayWithItsErrorAndTheDBUnchanged(t *testing.T) {
	src, want := backupSource(t)
	var full bytes.Buffer
	if _, err := src.Backup(&full, 0); err != nil {
		t.Fatal(err)
	}
	if full.Len() < 1<<20 {
		t.Fatalf("backup of %d bytes: the test wants more than one 1 MiB chunk", full.Len())
	}
	w := &failingWriter{room: full.Len() / 2}
	_, err := src.Backup(w, 0)
	if !errors.Is(err, errDiskFull) || !errors.Is(err, ErrIO) {
		t.Fatalf("Backup into a failing writer: %v, want the writer's error and ErrIO", err)
	}
	if !strings.Contains(err.Error(), "write callback") {
		t.Errorf("error does not say where it stopped: %v", err)
	}
	t.Logf("the failed backup: %v", err)
	if w.taken == 0 {
		t.Errorf("nothing reached the writer before it failed: not streamed")
	}
	for k, v := range want {
		if got := mustGet(t, src, k); got != v {
			t.Fatalf("%s changed after the failed backup", k)
		}
	}
	var again bytes.Buffer
	if _, err := src.Backup(&again, 0); err != nil || !bytes.Equal(again.Bytes(), full.Bytes()) {
		t.Fatalf("backup after the failed one: %v (same bytes: %v)", err, bytes.Equal(again.Bytes(), full.Bytes()))
	}
}

func TestRestoreFromAReaderThatFailsReportsItsErrorAndARetryRestoresEverything(t *testing.T) {
	src, want := backupSource(t)
	var full bytes.Buffer
	if _, err := src.Backup(&full, 0); err != nil {
		t.Fatal(err)
	}
	dst := openTemp(t)
	// Fails before the first 1 MiB chunk is whole: nothing is applied.
	_, err := dst.Restore(&failingReader{r: bytes.NewReader(full.Bytes()), at: 1 << 19})
	if !errors.Is(err, errNetworkGone) || !errors.Is(err, ErrIO) {
		t.Fatalf("Restore from a failing reader: %v, want the reader's error and ErrIO", err)
	}
	t.Logf("the failed restore: %v", err)
	if _, err := dst.Get([]byte("k00000")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a key was applied from a stream that failed in its first chunk: %v", err)
	}
	// A reader that hands out a few bytes at a time, with EOF on the last read.
	n, err := dst.Restore(iotest.DataErrReader(iotest.HalfReader(bytes.NewReader(full.Bytes()))))
	if err != nil || n != uint64(len(want)) {
		t.Fatalf("restore: %d entries, %v; want %d", n, err, len(want))
	}
	for k, v := range want {
		if got := mustGet(t, dst, k); got != v {
			t.Fatalf("%s restored as %d bytes, want %d", k, len(got), len(v))
		}
	}
}

func TestAPanickingWriterPanicsInTheCaller(t *testing.T) {
	db := openTemp(t)
	mustSet(t, db, "k", "v")
	defer func() {
		if r := recover(); r != "writer panic" {
			t.Fatalf("recovered %v, want the writer's panic", r)
		}
		if mustGet(t, db, "k") != "v" {
			t.Fatal("db changed")
		}
	}()
	_, _ = db.Backup(panicWriter{}, 0)
	t.Fatal("Backup returned after its writer panicked")
}

type panicWriter struct{}

func (panicWriter) Write([]byte) (int, error) { panic("writer panic") }

func TestVerifyCountsAHealthyDBAndNamesADamagedTable(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, &Options{ValueThreshold: 64, ValueLogGCRatio: -1})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 500; i++ {
		mustSet(t, db, fmt.Sprintf("v%04d", i), strings.Repeat("x", 10+(i%2)*100))
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	r, err := db.Verify()
	if err != nil {
		t.Fatal(err)
	}
	if r.Tables == 0 || r.Blocks < r.Tables || r.Entries != 500 || r.Values != 250 {
		t.Fatalf("report %+v, want tables, 500 entries, 250 values", r)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Verify(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Verify on a closed DB: %v", err)
	}
	tables, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	if len(tables) == 0 {
		t.Fatal("no table file")
	}
	f, err := os.OpenFile(tables[0], os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := []byte{0}
	if _, err := f.ReadAt(b, 100); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x5a
	if _, err := f.WriteAt(b, 100); err != nil {
		t.Fatal(err)
	}
	f.Close()
	db, err = Open(dir, &Options{ValueLogGCRatio: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = db.Verify()
	if !errors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), filepath.Base(tables[0])) {
		t.Fatalf("Verify of a damaged table: %v, want ErrCorruption naming %s", err, filepath.Base(tables[0]))
	}
}

func TestStatsCountValueLogGC(t *testing.T) {
	db := openTempWith(t, &Options{ValueThreshold: 64, MemTableSize: 16 << 10, ValueLogFileSize: 16 << 10, ValueLogGCRatio: -1})
	st, err := db.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.GCFilesRewritten != 0 || st.GCFilesDeleted != 0 || st.GCBytesReclaimed != 0 {
		t.Fatalf("GC counts before any GC: %+v", st)
	}
	for round := 0; round < 4; round++ {
		for i := 0; i < 300; i++ {
			mustSet(t, db, fmt.Sprintf("gc%04d", i), strings.Repeat(string(rune('a'+round)), 200))
		}
	}
	if err := db.Flatten(); err != nil {
		t.Fatal(err)
	}
	rounds := 0
	for db.RunValueLogGC(0.5) == nil {
		rounds++
	}
	if rounds == 0 {
		t.Fatal("GC collected nothing")
	}
	st, err = db.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.GCFilesRewritten+st.GCFilesDeleted < uint64(rounds) || st.GCBytesReclaimed == 0 || st.GCTime <= 0 {
		t.Fatalf("after %d GC rounds: %+v", rounds, st)
	}
}

func TestStatsReportTheBackgroundGCBacklogUntilItIsWorkedOff(t *testing.T) {
	dir := t.TempDir()
	small := Options{ValueThreshold: 64, MemTableSize: 16 << 10, ValueLogFileSize: 16 << 10}
	off := small
	off.ValueLogGCRatio = -1
	db, err := Open(dir, &off)
	if err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 3; round++ {
		for i := 0; i < 300; i++ {
			mustSet(t, db, fmt.Sprintf("gc%04d", i), strings.Repeat(string(rune('a'+round)), 200))
		}
	}
	if err := db.Flatten(); err != nil {
		t.Fatal(err)
	}
	if st, err := db.Stats(); err != nil || st.GCPendingFiles != 0 {
		t.Fatalf("background GC off: pending %+v, %v", st, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	on := small
	on.ValueLogGCRate = 64 << 10 // slow: the first look comes before it is through
	db, err = Open(dir, &on)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st, err := db.Stats()
	if err != nil || st.GCPendingFiles == 0 || st.GCPendingBytes == 0 {
		t.Fatalf("after reopening with garbage: %+v, %v", st, err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for st.GCPendingFiles > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("backlog never worked off: %+v", st)
		}
		time.Sleep(50 * time.Millisecond)
		if st, err = db.Stats(); err != nil {
			t.Fatal(err)
		}
	}
	if st.GCFilesRewritten+st.GCFilesDeleted == 0 {
		t.Fatalf("backlog gone without GC: %+v", st)
	}
}

func TestCacheSizeIsTheBudgetStatsReport(t *testing.T) {
	db := openTempWith(t, &Options{CacheSize: 3 << 20, MemTableSize: 64 << 10, Compression: CompressionLZ4})
	val := func(i int) string { return fmt.Sprintf(`{"id": %d, "name": "user"}`, i) }
	for i := 0; i < 3000; i++ {
		mustSet(t, db, fmt.Sprintf("k%05d", i), val(i))
	}
	if err := db.Flatten(); err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 3; round++ {
		for i := 0; i < 3000; i += 7 {
			if got := mustGet(t, db, fmt.Sprintf("k%05d", i)); got != val(i) {
				t.Fatalf("k%05d: %q", i, got)
			}
		}
	}
	st, err := db.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.CacheCapacity != 3<<20 || st.CacheUsage == 0 || st.CacheUsage > st.CacheCapacity || st.CachePinnedBytes == 0 {
		t.Fatalf("cache sizes: %+v", st)
	}
	// Compressed blocks read again come decompressed from the cache.
	if st.CacheDataMisses == 0 || st.CacheDataHits <= st.CacheDataMisses {
		t.Fatalf("cache counters: %+v", st)
	}
	if _, err := Open(t.TempDir(), &Options{CacheSize: 1000}); err == nil || !strings.Contains(err.Error(), "cache_size") {
		t.Fatalf("a 1000-byte budget: %v", err)
	}
}

func TestCheckpointOpensAsItsOwnDBAndLeavesTheSourceAlone(t *testing.T) {
	db := openTempWith(t, &Options{ValueThreshold: 64, MemTableSize: 16 << 10, ValueLogFileSize: 16 << 10})
	want := map[string]string{}
	for i := 0; i < 300; i++ {
		k, v := fmt.Sprintf("ck%04d", i), strings.Repeat(string(rune('a'+i%26)), 10+(i%2)*190)
		mustSet(t, db, k, v)
		want[k] = v
	}
	target := filepath.Join(t.TempDir(), "ckpt")
	r, err := db.Checkpoint(target)
	if err != nil {
		t.Fatal(err)
	}
	if r.FilesLinked < 2 || r.BytesLinked == 0 || r.FilesCopied != 0 {
		t.Fatalf("report %+v", r)
	}
	mustSet(t, db, "later", "x")
	if _, err := db.Checkpoint(target); !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("a second checkpoint onto %s: %v, want ErrInvalidArgument", target, err)
	}

	ck, err := Open(target, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	it, err := ck.NewIterator(IteratorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for ; it.Valid(); it.Next() {
		got[string(it.Key())] = string(it.Value())
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	it.Close()
	if len(got) != len(want) {
		t.Fatalf("the checkpoint holds %d keys, want %d", len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("key %s: %q, want %q", k, got[k], v)
		}
	}
	if vr, err := ck.Verify(); err != nil || vr.Values < 150 {
		t.Fatalf("verify of the checkpoint: %+v, %v", vr, err)
	}
	// Writes to the checkpoint do not reach the source, nor the other way.
	mustSet(t, ck, "ck0000", "changed")
	if v := mustGet(t, db, "ck0000"); v != want["ck0000"] {
		t.Fatalf("the source reads %q after a write to the checkpoint", v)
	}
	if _, err := ck.Get([]byte("later")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the checkpoint sees a later source write: %v", err)
	}
	if err := ck.Close(); err != nil {
		t.Fatal(err)
	}

	// A directory holding the marker of an interrupted checkpoint is refused.
	if err := os.WriteFile(filepath.Join(target, "CHECKPOINT-INCOMPLETE"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(target, nil); !errors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), "CHECKPOINT-INCOMPLETE") {
		t.Fatalf("open of a marked directory: %v, want ErrCorruption naming the marker", err)
	}
}
