package sett

import (
	"errors"
	"fmt"
	"testing"
)

func countKeys(t *testing.T, db *DB) int {
	t.Helper()
	it, err := db.NewIterator(IteratorOptions{KeysOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	n := 0
	for ; it.Valid(); it.Next() {
		n++
	}
	if it.Err() != nil {
		t.Fatal(it.Err())
	}
	return n
}

func fillKeys(t *testing.T, db *DB, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		mustSet(t, db, fmt.Sprintf("k%03d", i), fmt.Sprintf("v%d", i))
	}
}

func TestDeleteRangeHidesTheRangeFromReadsScansAndAfterFlatten(t *testing.T) {
	db := openTemp(t)
	fillKeys(t, db, 100)
	snap, err := db.NewTransaction(false)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteRange([]byte("k020"), []byte("k030")); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Get([]byte("k025")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("k025 after the range delete: %v", err)
	}
	if got := mustGet(t, db, "k030"); got != "v30" {
		t.Fatalf("k030: %q", got)
	}
	if got, err := snap.Get([]byte("k025")); err != nil || string(got) != "v25" {
		t.Fatalf("a snapshot from before: %q %v", got, err)
	}
	snap.Discard()
	rev, err := db.NewIterator(IteratorOptions{Reverse: true, Start: []byte("k018"), End: []byte("k032")})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for ; rev.Valid(); rev.Next() {
		keys = append(keys, string(rev.Key()))
	}
	rev.Close()
	if fmt.Sprint(keys) != "[k031 k030 k019 k018]" {
		t.Fatalf("reverse scan across the range: %v", keys)
	}
	if err := db.Flatten(); err != nil {
		t.Fatal(err)
	}
	if n := countKeys(t, db); n != 90 {
		t.Fatalf("%d keys after flatten, want 90", n)
	}
	st, err := db.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.TableEntries != 90 {
		t.Fatalf("tables hold %d entries after flatten, want 90", st.TableEntries)
	}
}

func TestBatchDeleteRangeRemovesEarlierPutsOfTheBatchButNotLaterOnes(t *testing.T) {
	db := openTemp(t)
	fillKeys(t, db, 100)
	b := db.NewBatch()
	for _, err := range []error{
		b.Set([]byte("k050"), []byte("early")),
		b.DeleteRange([]byte("k040"), []byte("k060")),
		b.Set([]byte("k055"), []byte("late")),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if b.Len() != 2 {
		t.Fatalf("batch holds %d operations, want 2", b.Len())
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Get([]byte("k050")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("k050: %v", err)
	}
	if got := mustGet(t, db, "k055"); got != "late" {
		t.Fatalf("k055: %q", got)
	}
	if n := countKeys(t, db); n != 81 {
		t.Fatalf("%d keys, want 81", n)
	}
	if err := b.DeleteRange([]byte("a"), []byte("b")); !errors.Is(err, ErrClosed) {
		t.Fatalf("DeleteRange on a committed batch: %v", err)
	}
}

func TestDeleteRangeRefusesABadRangeAndATransactionThatReadConflicts(t *testing.T) {
	db := openTemp(t)
	fillKeys(t, db, 10)
	if err := db.DeleteRange([]byte("k009"), []byte("k001")); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("start > end: %v", err)
	}
	if n := countKeys(t, db); n != 10 {
		t.Fatalf("%d keys after a refused range delete", n)
	}
	txn, err := db.NewTransaction(true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Get([]byte("k005")); err != nil {
		t.Fatal(err)
	}
	if err := txn.Set([]byte("other"), []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteRange([]byte("k000"), nil); err != nil { // no upper bound
		t.Fatal(err)
	}
	if err := txn.Commit(); !errors.Is(err, ErrConflict) {
		t.Fatalf("commit after a range delete: %v", err)
	}
	if n := countKeys(t, db); n != 0 {
		t.Fatalf("%d keys after an unbounded range delete", n)
	}
}

func TestTxnDeleteRangeIsSeenByItsReadsAndAppliedAtCommit(t *testing.T) {
	db := openTemp(t)
	fillKeys(t, db, 100)
	txn, err := db.NewTransaction(true)
	if err != nil {
		t.Fatal(err)
	}
	if err := txn.DeleteRange([]byte("k060"), []byte("k065")); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Get([]byte("k061")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("k061 in the transaction: %v", err)
	}
	if got := mustGet(t, db, "k061"); got != "v61" {
		t.Fatalf("k061 before the commit: %q", got)
	}
	if err := txn.DeleteRange([]byte("k9"), []byte("k1")); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("start > end: %v", err)
	}
	if err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := countKeys(t, db); n != 95 {
		t.Fatalf("%d keys after the commit, want 95", n)
	}
}
