package sett

import (
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"
)

func u64(n uint64) []byte { return binary.LittleEndian.AppendUint64(nil, n) }

func counterOf(t *testing.T, db *DB, k string) uint64 {
	t.Helper()
	v, err := db.Get([]byte(k))
	if err != nil || len(v) != 8 {
		t.Fatalf("get %q: %x, %v", k, v, err)
	}
	return binary.LittleEndian.Uint64(v)
}

func openMerge(t *testing.T, dir, op string) *DB {
	t.Helper()
	db, err := Open(dir, &Options{MergeOperator: op})
	if err != nil {
		t.Fatalf("open with %q: %v", op, err)
	}
	return db
}

func TestMergeU64CounterAddsUpAcrossAReopen(t *testing.T) {
	dir := t.TempDir()
	db := openMerge(t, dir, MergeU64Add)
	for i := 0; i < 5; i++ {
		if err := db.Merge([]byte("hits"), u64(1)); err != nil {
			t.Fatal(err)
		}
	}
	if got := counterOf(t, db, "hits"); got != 5 {
		t.Fatalf("hits = %d, want 5", got)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Merge([]byte("hits"), u64(10)); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openMerge(t, dir, MergeU64Add)
	defer db.Close()
	if got := counterOf(t, db, "hits"); got != 15 {
		t.Fatalf("hits after reopen = %d, want 15", got)
	}
}

func TestMergeAppendAndMaxFoldInWriteOrder(t *testing.T) {
	db := openTempWith(t, &Options{MergeOperator: MergeAppend})
	mustSet(t, db, "log", "a")
	for _, op := range []string{"bc", "d"} {
		if err := db.Merge([]byte("log"), []byte(op)); err != nil {
			t.Fatal(err)
		}
	}
	if got := mustGet(t, db, "log"); got != "abcd" {
		t.Fatalf("log = %q, want abcd", got)
	}
	mx := openTempWith(t, &Options{MergeOperator: MergeMax})
	for _, op := range []string{"b", "z", "q"} {
		if err := mx.Merge([]byte("m"), []byte(op)); err != nil {
			t.Fatal(err)
		}
	}
	if got := mustGet(t, mx, "m"); got != "z" {
		t.Fatalf("max = %q, want z", got)
	}
}

func TestMergeInBatchesTransactionsAndKeyspaces(t *testing.T) {
	db := openTempWith(t, &Options{MergeOperator: MergeAppend})
	logs, err := db.Keyspace("logs", nil)
	if err != nil {
		t.Fatal(err)
	}
	b := db.NewBatch()
	for _, err := range []error{
		b.Set([]byte("k"), []byte("x")),
		b.Merge([]byte("k"), []byte("y")),
		b.Merge([]byte("k"), []byte("z")),
		b.MergeIn(logs, []byte("k"), []byte("1")),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(txn *Txn) error {
		if err := txn.Merge([]byte("k"), []byte("!")); err != nil {
			return err
		}
		if err := txn.MergeIn(logs, []byte("k"), []byte("2")); err != nil {
			return err
		}
		v, err := txn.Get([]byte("k"))
		if err != nil || string(v) != "xyz!" {
			t.Errorf("the transaction reads %q, %v; want its own merge folded (xyz!)", v, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := logs.Merge([]byte("k"), []byte("3")); err != nil {
		t.Fatal(err)
	}
	v, err := logs.Get([]byte("k"))
	if err != nil || string(v) != "123" {
		t.Fatalf("keyspace k = %q, %v; want 123", v, err)
	}
	if got := mustGet(t, db, "k"); got != "xyz!" {
		t.Fatalf("default k = %q, want xyz!", got)
	}
}

func TestMergeFeedMarksAMergeAndCarriesItsOperand(t *testing.T) {
	db := openTempWith(t, &Options{MergeOperator: MergeAppend})
	ch, stop := collect(t, db, 0)
	waitSubscribed(t, db, ch)
	mustSet(t, db, "k", "a")
	if err := db.Merge([]byte("k"), []byte("b")); err != nil {
		t.Fatal(err)
	}
	var got []Change
	deadline := time.After(20 * time.Second)
	for len(got) < 2 {
		select {
		case cs := <-ch:
			for _, c := range cs {
				if string(c.Key) == "k" { // markers of waitSubscribed may still come
					got = append(got, c)
				}
			}
		case <-deadline:
			t.Fatalf("only %d of 2 changes", len(got))
		}
	}
	if err := stop(); !errors.Is(err, context.Canceled) {
		t.Fatalf("subscribe ended with %v", err)
	}
	if got[0].Merged || string(got[0].Value) != "a" || !got[1].Merged || string(got[1].Value) != "b" {
		t.Fatalf("changes: %+v", got)
	}
}

func TestMergeBadInputIsRefusedAndLosesNothing(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, &Options{MergeOperator: MergeU64Add, MaxValueSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	mustSet(t, db, "plain", "p")
	if err := db.Merge([]byte("n"), u64(2)); err != nil {
		t.Fatal(err)
	}
	// An empty key; a nil operand is an empty one, which u64_add refuses on read.
	if err := db.Merge(nil, u64(1)); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("merge of an empty key: %v", err)
	}
	if err := db.Merge([]byte("bad"), []byte("abc")); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Get([]byte("bad")); !errors.Is(err, ErrMergeFailed) || !strings.Contains(err.Error(), "operand of 3 bytes") {
		t.Fatalf("get of a malformed operand: %v", err)
	}
	// An oversized operand refuses the whole batch.
	b := db.NewBatch()
	_ = b.Set([]byte("other"), []byte("o"))
	_ = b.Merge([]byte("n"), make([]byte, 2048))
	if err := b.Commit(); !errors.Is(err, ErrTooBig) {
		t.Fatalf("batch with an operand over MaxValueSize: %v", err)
	}
	if _, err := db.Get([]byte("other")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the refused batch wrote other: %v", err)
	}
	if got := counterOf(t, db, "n"); got != 2 {
		t.Fatalf("n = %d after the refusals, want 2", got)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// An unknown operator name.
	if _, err := Open(dir, &Options{MergeOperator: "sett.nope"}); !errors.Is(err, ErrInvalidArgument) ||
		!strings.Contains(err.Error(), MergeU64Add) {
		t.Fatalf("open with an unknown operator: %v", err)
	}
	// Another operator than the recorded one.
	if _, err := Open(dir, &Options{MergeOperator: MergeAppend}); !errors.Is(err, ErrMergeOperatorMismatch) ||
		!strings.Contains(err.Error(), MergeU64Add) {
		t.Fatalf("open with another operator: %v", err)
	}
	// No operator: merged keys and merges are refused, the rest works.
	db = openMerge(t, dir, "")
	if _, err := db.Get([]byte("n")); !errors.Is(err, ErrMergeOperatorMissing) {
		t.Fatalf("get of a merged key without an operator: %v", err)
	}
	if err := db.Merge([]byte("n"), u64(1)); !errors.Is(err, ErrMergeOperatorMissing) {
		t.Fatalf("merge without an operator: %v", err)
	}
	err = db.Update(func(txn *Txn) error { return txn.Merge([]byte("n"), u64(1)) })
	if !errors.Is(err, ErrMergeOperatorMissing) {
		t.Fatalf("txn merge without an operator: %v", err)
	}
	if got := mustGet(t, db, "plain"); got != "p" {
		t.Fatalf("plain = %q", got)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openMerge(t, dir, MergeU64Add)
	defer db.Close()
	if got := counterOf(t, db, "n"); got != 2 {
		t.Fatalf("n = %d with the right operator, want 2", got)
	}
}
