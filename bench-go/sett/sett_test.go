package sett

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
)

func openTemp(t *testing.T) *DB {
	t.Helper()
	db, err := Open(t.TempDir(), &Options{ValueThreshold: 64, MemtableSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func TestSetGetDeleteAndNotFound(t *testing.T) {
	db := openTemp(t)
	if err := db.Set([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("x"), 5000)
	if err := db.Set([]byte("big"), big); err != nil {
		t.Fatal(err)
	}
	if v, err := db.Get([]byte("k")); err != nil || string(v) != "v" {
		t.Fatalf("get k: %q %v", v, err)
	}
	buf := make([]byte, 0, 16)
	if v, err := db.GetInto([]byte("big"), buf); err != nil || !bytes.Equal(v, big) {
		t.Fatalf("get big into a small buffer: %d bytes, %v", len(v), err)
	}
	if _, err := db.Get([]byte("absent")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("want ErrNotFound, got %v", err)
	}
	if err := db.Delete([]byte("k")); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Get([]byte("k")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted key: %v", err)
	}
	if err := db.Set(nil, []byte("v")); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("empty key: %v", err)
	}
	if err := db.Set(bytes.Repeat([]byte("k"), 70000), []byte("v")); !errors.Is(err, ErrTooBig) {
		t.Fatalf("oversized key: %v", err)
	}
	if v, err := db.Get([]byte("big")); err != nil || !bytes.Equal(v, big) {
		t.Fatalf("stored data after refused writes: %d bytes, %v", len(v), err)
	}
	if err := db.SetEntry([]byte("ttl"), []byte("v"), 3, time.Hour); err != nil {
		t.Fatal(err)
	}
}

func TestBatchAndMultiGet(t *testing.T) {
	db := openTemp(t)
	b := db.NewBatch()
	for i := 0; i < 100; i++ {
		if err := b.Set([]byte(fmt.Sprintf("b%03d", i)), []byte(fmt.Sprintf("v%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Delete([]byte("b050")); err != nil {
		t.Fatal(err)
	}
	if b.Len() != 101 {
		t.Fatalf("len %d", b.Len())
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second commit: %v", err)
	}
	vals, err := db.MultiGet([][]byte{[]byte("b001"), []byte("b050"), []byte("b099")})
	if err != nil {
		t.Fatal(err)
	}
	if string(vals[0]) != "v1" || vals[1] != nil || string(vals[2]) != "v99" {
		t.Fatalf("multiget: %q", vals)
	}
}

func TestTransactionsConflictAndView(t *testing.T) {
	db := openTemp(t)
	if err := db.Set([]byte("n"), []byte("0")); err != nil {
		t.Fatal(err)
	}
	t1, _ := db.begin(true)
	t2, _ := db.begin(true)
	defer t1.Discard()
	defer t2.Discard()
	if _, err := t1.Get([]byte("n")); err != nil {
		t.Fatal(err)
	}
	if _, err := t2.Get([]byte("n")); err != nil {
		t.Fatal(err)
	}
	_ = t1.Set([]byte("n"), []byte("1"))
	_ = t2.Set([]byte("n"), []byte("2"))
	if err := t1.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := t2.Commit(); !errors.Is(err, ErrConflict) {
		t.Fatalf("want ErrConflict, got %v", err)
	}
	err := db.View(func(txn *Txn) error {
		v, err := txn.Get([]byte("n"))
		if err != nil || string(v) != "1" {
			return fmt.Errorf("view read %q %v", v, err)
		}
		if err := txn.Set([]byte("x"), []byte("y")); !errors.Is(err, ErrInvalidArgument) {
			return fmt.Errorf("write in a view: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(txn *Txn) error { return txn.Set([]byte("u"), []byte("1")) })
	if err != nil {
		t.Fatal(err)
	}
}

func TestIteratorPrefixReverseKeysOnlyAndSeek(t *testing.T) {
	db := openTemp(t)
	for i := 0; i < 2000; i++ {
		_ = db.Set([]byte(fmt.Sprintf("p/%05d", i)), bytes.Repeat([]byte{byte(i)}, i%200))
	}
	_ = db.Set([]byte("q/other"), []byte("v"))
	it, err := db.NewIterator(IteratorOptions{Prefix: []byte("p/")})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for ; it.Valid(); it.Next() {
		if want := fmt.Sprintf("p/%05d", n); string(it.Key()) != want || len(it.Value()) != n%200 {
			t.Fatalf("entry %d: %q (%d bytes)", n, it.Key(), len(it.Value()))
		}
		n++
	}
	if n != 2000 || it.Err() != nil {
		t.Fatalf("iterated %d, err %v", n, it.Err())
	}
	if err := it.Seek([]byte("p/01500")); err != nil || string(it.Key()) != "p/01500" {
		t.Fatalf("seek: %q %v", it.Key(), err)
	}
	it.Close()
	it.Close()
	rev, _ := db.NewIterator(IteratorOptions{Reverse: true, KeysOnly: true, Start: []byte("p/00010"), End: []byte("p/00020")})
	var keys []string
	for ; rev.Valid(); rev.Next() {
		keys = append(keys, string(rev.Key()))
		if len(rev.Value()) != 0 {
			t.Fatal("keys-only iterator returned a value")
		}
	}
	rev.Close()
	if len(keys) != 10 || keys[0] != "p/00019" || keys[9] != "p/00010" {
		t.Fatalf("reverse bounded keys: %v", keys)
	}
}

func TestClosedDatabaseAndIteratorReturnErrorsNotCrashes(t *testing.T) {
	db, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10000; i++ {
		_ = db.Set([]byte(fmt.Sprintf("k%06d", i)), bytes.Repeat([]byte("v"), 100))
	}
	it, err := db.NewIterator(IteratorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if _, err := db.Get([]byte("k000001")); !errors.Is(err, ErrClosed) {
		t.Fatalf("get after close: %v", err)
	}
	if err := db.Set([]byte("k"), []byte("v")); !errors.Is(err, ErrClosed) {
		t.Fatalf("set after close: %v", err)
	}
	if _, err := db.NewIterator(IteratorOptions{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("iterator after close: %v", err)
	}
	for it.Valid() {
		it.Next()
	}
	if !errors.Is(it.Err(), ErrClosed) {
		t.Fatalf("iterator whose db closed: %v", it.Err())
	}
	it.Close()
}

func TestManyGoroutinesShareOneDB(t *testing.T) {
	db := openTemp(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			buf := make([]byte, 0, 64)
			for i := 0; i < 300; i++ {
				k := []byte(fmt.Sprintf("g%d/%d", g, i))
				v := []byte(fmt.Sprintf("value-%d-%d", g, i))
				if err := db.Set(k, v); err != nil {
					errs <- err
					return
				}
				got, err := db.GetInto(k, buf)
				if err != nil || !bytes.Equal(got, v) {
					errs <- fmt.Errorf("read back %q: %q %v", k, got, err)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func TestCloseRacingWithCallsInFlight(t *testing.T) {
	// Goroutines write, read and iterate while another closes the database:
	// each call succeeds or returns ErrClosed, nothing crashes, and once Close
	// has returned every call is refused.
	for round := 0; round < 5; round++ {
		db, err := Open(t.TempDir(), &Options{ValueThreshold: 64, MemtableSize: 64 << 10})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var closed sync.WaitGroup
		closed.Add(1)
		errs := make(chan error, 16)
		for g := 0; g < 6; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				ok := func(err error) bool { return err == nil || errors.Is(err, ErrNotFound) }
				for i := 0; ; i++ {
					k := []byte(fmt.Sprintf("g%d/%d", g, i%500))
					var err error
					switch i % 3 {
					case 0:
						err = db.Set(k, bytes.Repeat([]byte{byte(g)}, 100))
					case 1:
						_, err = db.Get(k)
					default:
						var it *Iterator
						it, err = db.NewIterator(IteratorOptions{Prefix: []byte(fmt.Sprintf("g%d/", g))})
						if err == nil {
							for n := 0; it.Valid() && n < 20; n++ {
								it.Next()
							}
							err = it.Err()
							it.Close()
						}
					}
					if errors.Is(err, ErrClosed) {
						return
					}
					if !ok(err) {
						errs <- fmt.Errorf("goroutine %d, call %d: %v", g, i, err)
						return
					}
				}
			}(g)
		}
		go func() {
			defer closed.Done()
			time.Sleep(time.Duration(5+round*10) * time.Millisecond)
			if err := db.Close(); err != nil {
				errs <- fmt.Errorf("close: %v", err)
			}
		}()
		closed.Wait()
		if err := db.Set([]byte("after"), []byte("close")); !errors.Is(err, ErrClosed) {
			t.Fatalf("a write after Close returned %v", err)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
}

func TestVersionMatchesHeader(t *testing.T) {
	if Version() != headerVersion() {
		t.Fatalf("libsett reports version %d, the sett.h compiled in says %d", Version(), headerVersion())
	}
}

func TestMultiGetUnderGarbageCollection(t *testing.T) {
	db := openTemp(t)
	keys := make([][]byte, 64)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("mg%03d", i))
		if i%2 == 0 {
			_ = db.Set(keys[i], keys[i])
		}
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < 300; r++ {
				vals, err := db.MultiGet(keys)
				if err != nil {
					t.Error(err)
					return
				}
				for i, v := range vals {
					if (i%2 == 0) != (v != nil) || (v != nil && !bytes.Equal(v, keys[i])) {
						t.Errorf("key %d: %q", i, v)
						return
					}
				}
				if r%50 == 0 {
					runtime.GC()
				}
			}
		}()
	}
	wg.Wait()
}

func TestStatsCountTablesAndSettleAfterCompactions(t *testing.T) {
	db, err := Open(t.TempDir(), &Options{ValueThreshold: 64, MemtableSize: 64 << 10})
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
	t.Logf("settled: %+v", st)
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
	if st.VlogFiles == 0 || st.VlogBytes < n*100 || st.LastSeq < n || st.BatchesWritten < n {
		t.Fatalf("value log or counters: %+v", st)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Stats(); !errors.Is(err, ErrClosed) {
		t.Fatalf("stats after close: %v", err)
	}
}
