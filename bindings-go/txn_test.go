package sett

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"
)

func TestConflictingCommitFailsAndViewSeesASnapshot(t *testing.T) {
	db := openTemp(t)
	mustSet(t, db, "n", "0")
	t1, _ := db.NewTransaction(true)
	t2, _ := db.NewTransaction(true)
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
	if err := t2.Set([]byte("n"), []byte("3")); !errors.Is(err, ErrClosed) {
		t.Fatalf("a write after a failed commit: %v", err)
	}
	snap, _ := db.NewTransaction(false)
	defer snap.Discard()
	mustSet(t, db, "n", "later")
	err := db.View(func(txn *Txn) error {
		if v, err := txn.Get([]byte("n")); err != nil || string(v) != "later" {
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
	if v, err := snap.Get([]byte("n")); err != nil || string(v) != "1" {
		t.Fatalf("a snapshot taken before a write saw %q %v", v, err)
	}
}

func TestTxnSeesItsOwnWritesAndDeletes(t *testing.T) {
	db := openTemp(t)
	mustSet(t, db, "gone", "x")
	err := db.Update(func(txn *Txn) error {
		_ = txn.Set([]byte("a"), []byte("1"))
		_ = txn.Delete([]byte("gone"))
		if err := txn.SetEntry(NewEntry([]byte("m"), []byte("v")).WithMeta(3)); err != nil {
			return err
		}
		if v, err := txn.Get([]byte("a")); err != nil || string(v) != "1" {
			return fmt.Errorf("own write: %q %v", v, err)
		}
		if _, err := txn.Get([]byte("gone")); !errors.Is(err, ErrNotFound) {
			return fmt.Errorf("own delete: %v", err)
		}
		it, err := txn.NewIterator(IteratorOptions{})
		if err != nil {
			return err
		}
		defer it.Close()
		var keys []string
		for ; it.Valid(); it.Next() {
			keys = append(keys, string(it.Key()))
		}
		if fmt.Sprint(keys) != "[a m]" {
			return fmt.Errorf("transaction iterator: %v", keys)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if it, err := db.GetItem([]byte("m")); err != nil || it.UserMeta != 3 {
		t.Fatalf("entry written in a transaction: %+v %v", it, err)
	}
}

func TestUpdateRetriesConflictsSoNoIncrementIsLost(t *testing.T) {
	db := openTemp(t)
	mustSet(t, db, "counter", "0")
	// Four goroutines that sleep between their read and their write: commits
	// conflict, and Update must rerun them. (Four, so that losing 64 rounds in
	// a row, about (3/4)^64, does not happen.)
	const goroutines, each = 4, 25
	var wg sync.WaitGroup
	var calls sync.Map
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				err := db.Update(func(txn *Txn) error {
					n, _ := calls.LoadOrStore(g, new(int))
					*n.(*int)++
					v, err := txn.Get([]byte("counter"))
					if err != nil {
						return err
					}
					c, _ := strconv.Atoi(string(v))
					time.Sleep(100 * time.Microsecond)
					return txn.Set([]byte("counter"), []byte(strconv.Itoa(c+1)))
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	if got := mustGet(t, db, "counter"); got != strconv.Itoa(goroutines*each) {
		t.Fatalf("counter %s after %d increments", got, goroutines*each)
	}
	total := 0
	calls.Range(func(_, n any) bool { total += *n.(*int); return true })
	t.Logf("%d increments took %d runs of the function", goroutines*each, total)
	if total <= goroutines*each {
		t.Fatalf("no conflict was retried (%d runs for %d increments): the test proves nothing", total, goroutines*each)
	}
}

func TestUpdateGivesUpAfter64ConflictsAndDoesNotRetryErrorsOfFn(t *testing.T) {
	db := openTemp(t)
	mustSet(t, db, "k", "0")
	runs := 0
	err := db.Update(func(txn *Txn) error {
		runs++
		if _, err := txn.Get([]byte("k")); err != nil {
			return err
		}
		// A write outside the transaction, committed after it began, to the
		// key it read: every commit conflicts.
		if err := db.Set([]byte("k"), []byte(strconv.Itoa(runs))); err != nil {
			return err
		}
		return txn.Set([]byte("other"), []byte("x"))
	})
	if !errors.Is(err, ErrConflict) || runs != UpdateRetries {
		t.Fatalf("after %d runs: %v; want ErrConflict after %d", runs, err, UpdateRetries)
	}
	if _, err := db.Get([]byte("other")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a conflicted transaction's write is visible: %v", err)
	}
	runs = 0
	mine := errors.New("mine")
	if err := db.Update(func(*Txn) error { runs++; return mine }); err != mine || runs != 1 {
		t.Fatalf("fn's own error: %v after %d runs", err, runs)
	}
	runs = 0
	if err := db.Update(func(*Txn) error { runs++; return ErrConflict }); !errors.Is(err, ErrConflict) || runs != 1 {
		t.Fatalf("ErrConflict returned by fn itself was retried: %d runs", runs)
	}
}

func TestTooBigPutLeavesTheTransactionUsable(t *testing.T) {
	db := openTempWith(t, &Options{MaxTxnSize: 4096})
	txn, err := db.NewTransaction(true)
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Discard()
	if err := txn.Set([]byte("small"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := txn.SetEntry(NewEntry([]byte("huge"), make([]byte, 8192))); !errors.Is(err, ErrTooBig) {
		t.Fatalf("a put over MaxTxnSize: %v", err)
	}
	if err := txn.Commit(); err != nil {
		t.Fatalf("commit after a refused put: %v", err)
	}
	if mustGet(t, db, "small") != "v" {
		t.Fatal("the write before the refused put")
	}
	if _, err := db.Get([]byte("huge")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the refused put was written: %v", err)
	}
}

func TestDiscardDropsWrites(t *testing.T) {
	db := openTemp(t)
	txn, _ := db.NewTransaction(true)
	_ = txn.Set([]byte("k"), []byte("v"))
	txn.Discard()
	txn.Discard()
	if err := txn.Commit(); !errors.Is(err, ErrClosed) {
		t.Fatalf("commit after discard: %v", err)
	}
	if _, err := db.Get([]byte("k")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a discarded write is visible: %v", err)
	}
}

func TestTxnGetItemReadsMetaExpiryAndVersionAndItsOwnWrite(t *testing.T) {
	db := openTemp(t)
	if err := db.SetEntry(NewEntry([]byte("k"), []byte("v1")).WithMeta(9).WithTTL(time.Hour)); err != nil {
		t.Fatal(err)
	}
	outside, err := db.GetItem([]byte("k"))
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(txn *Txn) error {
		it, err := txn.GetItem([]byte("k"))
		if err != nil {
			return err
		}
		if string(it.Value) != "v1" || it.UserMeta != 9 || it.Version != outside.Version ||
			it.ExpiresAt != outside.ExpiresAt || it.ExpiresAt < uint64(time.Now().Unix()) {
			t.Errorf("in the transaction: %+v, outside: %+v", it, outside)
		}
		if err := txn.SetEntry(NewEntry([]byte("k"), []byte("v2")).WithMeta(4)); err != nil {
			return err
		}
		own, err := txn.GetItem([]byte("k"))
		if err != nil {
			return err
		}
		if string(own.Value) != "v2" || own.UserMeta != 4 || own.Version != 0 || own.ExpiresAt != 0 {
			t.Errorf("own pending write: %+v", own)
		}
		if _, err := txn.GetItem([]byte("absent")); !errors.Is(err, ErrNotFound) {
			t.Errorf("absent key: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	txn, err := db.NewTransaction(false)
	if err != nil {
		t.Fatal(err)
	}
	txn.Discard()
	if _, err := txn.GetItem([]byte("k")); !errors.Is(err, ErrClosed) {
		t.Fatalf("GetItem after Discard: %v", err)
	}
}
