package sett

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestSetGetDeleteAndNotFound(t *testing.T) {
	db := openTemp(t)
	mustSet(t, db, "k", "v")
	big := bytes.Repeat([]byte("x"), 5000)
	if err := db.Set([]byte("big"), big); err != nil {
		t.Fatal(err)
	}
	if v := mustGet(t, db, "k"); v != "v" {
		t.Fatalf("get k: %q", v)
	}
	buf := make([]byte, 0, 16)
	if v, err := db.GetInto([]byte("big"), buf); err != nil || !bytes.Equal(v, big) {
		t.Fatalf("get big into a small buffer: %d bytes, %v", len(v), err)
	}
	buf = make([]byte, 0, 8)
	if v, err := db.GetInto([]byte("k"), buf); err != nil || string(v) != "v" || &v[0] != &buf[:1][0] {
		t.Fatalf("get into a buffer that fits did not use it: %q %v", v, err)
	}
	if _, err := db.Get([]byte("absent")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("want ErrNotFound, got %v", err)
	}
	if _, err := db.GetInto([]byte("absent"), nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetInto: want ErrNotFound, got %v", err)
	}
	if err := db.Delete([]byte("k")); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Get([]byte("k")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted key: %v", err)
	}
	if err := db.Delete([]byte("never-there")); err != nil {
		t.Fatalf("deleting an absent key: %v", err)
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
}

func TestEmptyValueIsNotMissing(t *testing.T) {
	db := openTemp(t)
	mustSet(t, db, "empty", "")
	v, err := db.Get([]byte("empty"))
	if err != nil || v == nil || len(v) != 0 {
		t.Fatalf("Get of an empty value: %q (nil %v) %v", v, v == nil, err)
	}
	v, err = db.GetInto([]byte("empty"), nil)
	if err != nil || v == nil || len(v) != 0 {
		t.Fatalf("GetInto of an empty value: %q (nil %v) %v", v, v == nil, err)
	}
}

func TestSetEntryStoresMetaAndTTLThatGetItemReturns(t *testing.T) {
	db := openTemp(t)
	before := uint64(time.Now().Unix())
	if err := db.SetEntry(NewEntry([]byte("e"), []byte("val")).WithMeta(7).WithTTL(time.Hour)); err != nil {
		t.Fatal(err)
	}
	it, err := db.GetItem([]byte("e"))
	if err != nil {
		t.Fatal(err)
	}
	if string(it.Key) != "e" || string(it.Value) != "val" || it.UserMeta != 7 || it.Version == 0 {
		t.Fatalf("item: %+v", it)
	}
	if it.ExpiresAt < before+3599 || it.ExpiresAt > before+3602 {
		t.Fatalf("expires at %d, want about %d", it.ExpiresAt, before+3600)
	}
	mustSet(t, db, "plain", "p")
	it2, err := db.GetItem([]byte("plain"))
	if err != nil || it2.UserMeta != 0 || it2.ExpiresAt != 0 || it2.Version <= it.Version {
		t.Fatalf("plain item: %+v %v (first version %d)", it2, err, it.Version)
	}
	if _, err := db.GetItem([]byte("absent")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetItem of an absent key: %v", err)
	}
	if err := db.SetEntry(NewEntry([]byte("neg"), nil).WithTTL(-time.Second)); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("negative TTL: %v", err)
	}
}

func TestExpiredEntryIsGone(t *testing.T) {
	db := openTemp(t)
	// The TTL is rounded up to whole seconds: 1 ms lives 1 s.
	if err := db.SetEntry(NewEntry([]byte("short"), []byte("v")).WithTTL(time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := db.Get([]byte("short"))
		if errors.Is(err, ErrNotFound) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("an entry with a 1 ms TTL was still there after 5 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestMultiGet(t *testing.T) {
	db := openTemp(t)
	mustSet(t, db, "a", "1")
	mustSet(t, db, "c", "3")
	vals, err := db.MultiGet([][]byte{[]byte("a"), []byte("b"), []byte("c")})
	if err != nil {
		t.Fatal(err)
	}
	if string(vals[0]) != "1" || vals[1] != nil || string(vals[2]) != "3" {
		t.Fatalf("multiget: %q", vals)
	}
	if vals, err := db.MultiGet(nil); err != nil || vals != nil {
		t.Fatalf("empty multiget: %q %v", vals, err)
	}
	if _, err := db.MultiGet([][]byte{[]byte("a"), nil}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("multiget with an empty key: %v", err)
	}
}

// The values' buffer of one MultiGet belongs to its caller: later calls,
// which allocate theirs by the size the last one needed, never write into it.
func TestMultiGetValuesStayIntactAcrossLaterCalls(t *testing.T) {
	db := openTemp(t)
	mustSet(t, db, "a", strings.Repeat("a", 100))
	mustSet(t, db, "b", strings.Repeat("b", 100))
	var kept [][][]byte
	for i := 0; i < 50; i++ {
		k := []byte{"ab"[i%2]}
		vals, err := db.MultiGet([][]byte{k, k})
		if err != nil {
			t.Fatal(err)
		}
		kept = append(kept, vals)
	}
	for i, vals := range kept {
		want := strings.Repeat(string("ab"[i%2]), 100)
		for j, v := range vals {
			if string(v) != want {
				t.Fatalf("value %d of call %d became %q", j, i, v)
			}
		}
	}
}

// MultiGetFunc lends each value in the order asked, nil for a missing key
// and empty (not nil) for an empty value, and a keyspace's reads only its own.
func TestMultiGetFuncLendsValuesInTheOrderAsked(t *testing.T) {
	db := openTemp(t)
	mustSet(t, db, "a", strings.Repeat("a", 3000))
	mustSet(t, db, "e", "")
	keys := [][]byte{[]byte("missing"), []byte("a"), []byte("e"), []byte("a")}
	for round := 0; round < 3; round++ {
		var got []string
		err := db.MultiGetFunc(keys, func(i int, v []byte) {
			if v == nil {
				got = append(got, fmt.Sprintf("%d:nil", i))
				return
			}
			got = append(got, fmt.Sprintf("%d:%d", i, len(v)))
		})
		if err != nil {
			t.Fatal(err)
		}
		if want := "0:nil 1:3000 2:0 3:3000"; strings.Join(got, " ") != want {
			t.Fatalf("round %d: %v, want %s", round, got, want)
		}
	}
	// MultiGet's owned values say the same of the empty one.
	vals, err := db.MultiGet(keys)
	if err != nil || vals[0] != nil || vals[2] == nil || len(vals[2]) != 0 || len(vals[3]) != 3000 {
		t.Fatalf("MultiGet: %v %v", vals, err)
	}
	ks, err := db.Keyspace("k", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ks.Set([]byte("a"), []byte("mine")); err != nil {
		t.Fatal(err)
	}
	var mine []string
	if err := ks.MultiGetFunc([][]byte{[]byte("a"), []byte("e")}, func(i int, v []byte) {
		mine = append(mine, fmt.Sprintf("%d:%q:%v", i, v, v == nil))
	}); err != nil {
		t.Fatal(err)
	}
	// The keyspace has no "e": the default keyspace's empty value is not its.
	if strings.Join(mine, " ") != `0:"mine":false 1:"":true` {
		t.Fatalf("keyspace: %v", mine)
	}
	if err := db.MultiGetFunc([][]byte{nil}, func(int, []byte) {}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("an empty key: %v", err)
	}
	// The refused call lost nothing.
	if v := mustGet(t, db, "a"); v != strings.Repeat("a", 3000) {
		t.Fatalf("after the refused call: %d bytes", len(v))
	}
}

// MultiGet's values share one allocation: each is capped at its length, so
// that appending to one leaves the next intact, and values larger than the
// reused buffer grow it (a second call into C) without losing any.
func TestMultiGetValuesLargerThanItsBufferAndAppendsToOneLeaveTheOthers(t *testing.T) {
	db := openTemp(t)
	big := bytes.Repeat([]byte("v"), 3000) // two of them outgrow a 4 KiB buffer
	mustSet(t, db, "a", string(big))
	mustSet(t, db, "b", "small")
	mustSet(t, db, "c", string(big[:2000]))
	keys := [][]byte{[]byte("a"), []byte("b"), []byte("missing"), []byte("c"), []byte("a")}
	for round := 0; round < 2; round++ {
		vals, err := db.MultiGet(keys)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(vals[0], big) || string(vals[1]) != "small" || vals[2] != nil ||
			!bytes.Equal(vals[3], big[:2000]) || !bytes.Equal(vals[4], big) {
			t.Fatalf("round %d: wrong values (lengths %d %d %v %d %d)", round, len(vals[0]), len(vals[1]), vals[2] == nil, len(vals[3]), len(vals[4]))
		}
		vals[1] = append(vals[1], "XXXXXXXX"...)
		if !bytes.Equal(vals[3], big[:2000]) || string(vals[1]) != "smallXXXXXXXX" {
			t.Fatalf("round %d: appending to one value changed the next", round)
		}
	}
	// A keyspace takes the same path and reads only its own keys.
	ks, err := db.Keyspace("k", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ks.Set([]byte("a"), []byte("ks")); err != nil {
		t.Fatal(err)
	}
	vals, err := ks.MultiGet([][]byte{[]byte("b"), []byte("a")})
	if err != nil || vals[0] != nil || string(vals[1]) != "ks" {
		t.Fatalf("keyspace multiget: %q %v", vals, err)
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
	txn, err := db.NewTransaction(true)
	if err != nil {
		t.Fatal(err)
	}
	seq, err := db.GetSequence([]byte("seq"), 10)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	checks := map[string]error{}
	_, checks["Get"] = db.Get([]byte("k000001"))
	_, checks["GetInto"] = db.GetInto([]byte("k000001"), nil)
	_, checks["GetItem"] = db.GetItem([]byte("k000001"))
	_, checks["MultiGet"] = db.MultiGet([][]byte{[]byte("k")})
	checks["Set"] = db.Set([]byte("k"), []byte("v"))
	checks["SetEntry"] = db.SetEntry(NewEntry([]byte("k"), nil))
	checks["Delete"] = db.Delete([]byte("k"))
	_, checks["NewIterator"] = db.NewIterator(IteratorOptions{})
	_, checks["NewTransaction"] = db.NewTransaction(false)
	checks["Update"] = db.Update(func(*Txn) error { return nil })
	checks["View"] = db.View(func(*Txn) error { return nil })
	checks["Batch.Commit"] = db.NewBatch().Commit()
	checks["Flush"] = db.Flush()
	checks["Flatten"] = db.Flatten()
	checks["DropAll"] = db.DropAll()
	checks["DropPrefix"] = db.DropPrefix([]byte("k"))
	checks["RunValueLogGC"] = db.RunValueLogGC(0.5)
	_, checks["Stats"] = db.Stats()
	_, checks["BackupFile"] = db.BackupFile(t.TempDir()+"/b", 0)
	_, checks["GetSequence"] = db.GetSequence([]byte("s"), 1)
	_, checks["NewBulkLoader"] = db.NewBulkLoader()
	_, checks["Txn.Get (open before Close)"] = txn.Get([]byte("k000001"))
	// A sequence hands out the rest of its lease (10 numbers, already
	// persisted) without the database; the next lease needs it.
	var seqErr error
	for i := 0; i <= 10 && seqErr == nil; i++ {
		_, seqErr = seq.Next()
	}
	checks["Sequence.Next past its lease (open before Close)"] = seqErr
	for name, err := range checks {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
	txn.Discard()
	_ = seq.Release()
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
		db, err := Open(t.TempDir(), &Options{ValueThreshold: 64, MemTableSize: 64 << 10})
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
	if Version() != HeaderVersion() {
		t.Fatalf("libsett reports version %d, the sett.h compiled in says %d", Version(), HeaderVersion())
	}
	v := Version()
	if want := fmt.Sprintf("%d.%d.%d", v/10000, v/100%100, v%100); VersionString() != want {
		t.Fatalf("VersionString %q, version number %d", VersionString(), v)
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

func TestDataSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, &Options{ValueThreshold: 64})
	if err != nil {
		t.Fatal(err)
	}
	mustSet(t, db, "small", "s")
	big := string(bytes.Repeat([]byte("B"), 1000))
	mustSet(t, db, "big", big)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(dir, &Options{ValueThreshold: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if mustGet(t, db, "small") != "s" || mustGet(t, db, "big") != big {
		t.Fatal("values changed across a reopen")
	}
}
