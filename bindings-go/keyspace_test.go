package sett

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// ksKeys lists an iterator's keys (and closes it); an error shows up as a
// last "error: ..." entry, so that comparisons with the wanted keys fail.
func ksKeys(it *Iterator, err error) []string {
	if err != nil {
		return []string{"error: " + err.Error()}
	}
	defer it.Close()
	var keys []string
	for ; it.Valid(); it.Next() {
		keys = append(keys, string(it.Key()))
	}
	if err := it.Err(); err != nil {
		keys = append(keys, "error: "+err.Error())
	}
	return keys
}

func mustKeyspace(t *testing.T, db *DB, name string, o *KeyspaceOptions) *Keyspace {
	t.Helper()
	ks, err := db.Keyspace(name, o)
	if err != nil {
		t.Fatalf("keyspace %q: %v", name, err)
	}
	t.Cleanup(ks.Close)
	return ks
}

func ksGet(t *testing.T, ks *Keyspace, k string) string {
	t.Helper()
	v, err := ks.Get([]byte(k))
	if errors.Is(err, ErrNotFound) {
		return "<none>"
	}
	if err != nil {
		t.Fatalf("get %q in %s: %v", k, ks.Name(), err)
	}
	return string(v)
}

func TestTwoKeyspacesWithTheSameKeysStayIndependent(t *testing.T) {
	db := openTemp(t)
	a := mustKeyspace(t, db, "a", nil)
	b := mustKeyspace(t, db, "b", nil)
	if a.ID() == b.ID() || a.ID() == 0 {
		t.Fatalf("ids %d and %d", a.ID(), b.ID())
	}
	for _, k := range []string{"k1", "k2", "k3", "k4"} {
		if err := a.Set([]byte(k), []byte("a"+k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Set([]byte("k1"), []byte("b1")); err != nil {
		t.Fatal(err)
	}
	mustSet(t, db, "k1", "d1")
	if err := a.Delete([]byte("k1")); err != nil {
		t.Fatal(err)
	}
	if err := a.DeleteRange([]byte("k4"), nil); err != nil {
		t.Fatal(err)
	}
	if got := [3]string{ksGet(t, a, "k1"), ksGet(t, b, "k1"), mustGet(t, db, "k1")}; got != [3]string{"<none>", "b1", "d1"} {
		t.Fatalf("k1 reads %v", got)
	}
	if got := ksKeys(a.NewIterator(IteratorOptions{})); !reflect.DeepEqual(got, []string{"k2", "k3"}) {
		t.Fatalf("keyspace a holds %v", got)
	}
	if got := ksKeys(a.NewIterator(IteratorOptions{Reverse: true, Start: []byte("k3")})); !reflect.DeepEqual(got, []string{"k3"}) {
		t.Fatalf("reverse from k3: %v", got)
	}
	if got := ksKeys(db.NewIterator(IteratorOptions{})); !reflect.DeepEqual(got, []string{"k1"}) {
		t.Fatalf("the default keyspace holds %v", got)
	}
	err := db.Set([]byte("\xff\xff\xff\xffx"), []byte("v"))
	if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "FF FF FF FF") {
		t.Fatalf("a marker key in the default keyspace: %v", err)
	}
}

func TestBatchesAndTransactionsSpanKeyspaces(t *testing.T) {
	db := openTemp(t)
	a := mustKeyspace(t, db, "a", nil)
	b := mustKeyspace(t, db, "b", nil)
	batch := db.NewBatch()
	for _, err := range []error{
		batch.SetIn(a, []byte("x"), []byte("1")),
		batch.SetIn(b, []byte("x"), []byte("2")),
		batch.Set([]byte("x"), []byte("3")),
		batch.SetIn(b, []byte("gone"), []byte("g")),
		batch.DeleteIn(b, []byte("gone")),
		batch.SetIn(a, []byte("r1"), []byte("r")),
		batch.DeleteRangeIn(a, []byte("r"), []byte("s")),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := batch.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := [4]string{ksGet(t, a, "x"), ksGet(t, b, "x"), ksGet(t, b, "gone"), ksGet(t, a, "r1")}; got != [4]string{"1", "2", "<none>", "<none>"} {
		t.Fatalf("after the batch: %v", got)
	}
	err := db.Update(func(txn *Txn) error {
		if err := txn.SetIn(a, []byte("y"), []byte("ay")); err != nil {
			return err
		}
		if err := txn.SetIn(b, []byte("y"), []byte("by")); err != nil {
			return err
		}
		if err := txn.DeleteIn(a, []byte("x")); err != nil {
			return err
		}
		if v, err := txn.GetIn(a, []byte("y")); err != nil || string(v) != "ay" {
			t.Errorf("own write: %q, %v", v, err)
		}
		if keys := ksKeys(txn.NewIteratorIn(a, IteratorOptions{})); !reflect.DeepEqual(keys, []string{"y"}) {
			t.Errorf("the txn's view of a: %v", keys)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := [3]string{ksGet(t, a, "y"), ksGet(t, b, "y"), ksGet(t, a, "x")}; got != [3]string{"ay", "by", "<none>"} {
		t.Fatalf("after the transaction: %v", got)
	}
	txn, err := db.NewTransaction(true)
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Discard()
	if _, err := txn.GetIn(b, []byte("y")); err != nil {
		t.Fatal(err)
	}
	if err := txn.SetIn(a, []byte("z"), []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := b.Set([]byte("y"), []byte("changed")); err != nil {
		t.Fatal(err)
	}
	if err := txn.Commit(); !errors.Is(err, ErrConflict) {
		t.Fatalf("a conflicting commit: %v", err)
	}
	if got := ksGet(t, a, "z"); got != "<none>" {
		t.Fatalf("the conflicting txn wrote %q", got)
	}
}

func TestDroppedKeyspacesAreGoneAndOptionsSurviveAReopen(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, &Options{ValueThreshold: 1024})
	if err != nil {
		t.Fatal(err)
	}
	small, err := db.Keyspace("small", &KeyspaceOptions{ValueThreshold: 16, DefaultTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	gone := mustKeyspace(t, db, "gone", nil)
	if err := small.Set([]byte("k"), []byte(strings.Repeat("v", 100))); err != nil {
		t.Fatal(err)
	}
	if err := gone.Set([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if names, err := db.Keyspaces(); err != nil || !reflect.DeepEqual(names, []string{"gone", "small"}) {
		t.Fatalf("keyspaces %v, %v", names, err)
	}
	if err := db.DropKeyspace("gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := gone.Get([]byte("k")); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("a dropped keyspace's handle: %v", err)
	}
	if err := db.DropKeyspace("gone"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("dropping it again: %v", err)
	}
	small.Close()
	if _, err := small.Get([]byte("k")); !errors.Is(err, ErrClosed) {
		t.Fatalf("a closed handle: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(dir, &Options{ValueThreshold: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if names, err := db.Keyspaces(); err != nil || !reflect.DeepEqual(names, []string{"small"}) {
		t.Fatalf("keyspaces after reopen %v, %v", names, err)
	}
	small = mustKeyspace(t, db, "small", nil)
	if got := ksGet(t, small, "k"); got != strings.Repeat("v", 100) {
		t.Fatalf("small holds %q", got)
	}
	before := mustStats(t, db).VlogBytes
	if err := small.Set([]byte("big"), []byte(strings.Repeat("w", 200))); err != nil {
		t.Fatal(err)
	}
	if after := mustStats(t, db).VlogBytes; after < before+200 {
		t.Fatalf("the recorded threshold of 16 was not applied: value log %d -> %d", before, after)
	}
	if _, err := db.Keyspace("", nil); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("an empty name: %v", err)
	}
}

func mustStats(t *testing.T, db *DB) Stats {
	t.Helper()
	s, err := db.Stats()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestAKeyspaceSubscriptionSeesItsKeysAndTheDBsDoesNot(t *testing.T) {
	db := openTemp(t)
	ks := mustKeyspace(t, db, "ks", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sink := func(ch chan<- string) func([]Change) error {
		return func(cs []Change) error {
			for _, c := range cs {
				k := string(c.Key)
				if c.DeleteRange {
					k = "range[" + k + "," + string(c.Value) + ")"
				}
				ch <- k
			}
			return nil
		}
	}
	allCh, ownCh := make(chan string, 1000), make(chan string, 1000)
	done := make(chan error, 2)
	go func() { done <- db.Subscribe(ctx, sink(allCh), 0) }()
	go func() { done <- ks.Subscribe(ctx, sink(ownCh), 0) }()
	// Probes until both subscriptions deliver: then both are open.
	for ready := [2]bool{}; !ready[0] || !ready[1]; {
		if err := db.Set([]byte("probe"), nil); err != nil {
			t.Fatal(err)
		}
		if err := ks.Set([]byte("probe"), nil); err != nil {
			t.Fatal(err)
		}
		select {
		case <-allCh:
			ready[0] = true
		case <-ownCh:
			ready[1] = true
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			t.Fatal("the subscriptions never delivered a probe")
		}
	}
	if err := ks.Set([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := db.DropKeyspace("ks"); err != nil {
		t.Fatal(err)
	}
	if err := db.Set([]byte("d"), []byte("w")); err != nil {
		t.Fatal(err)
	}
	// Everything up to the last write of each stream, probes left out.
	until := func(ch <-chan string, last string) []string {
		var got []string
		for {
			select {
			case k := <-ch:
				if k != "probe" {
					got = append(got, k)
				}
				if k == last {
					return got
				}
			case <-ctx.Done():
				return append(got, "timed out")
			}
		}
	}
	if got := until(allCh, "d"); !reflect.DeepEqual(got, []string{"d"}) {
		t.Fatalf("the DB's subscription saw %v", got)
	}
	if got := until(ownCh, "range[,)"); !reflect.DeepEqual(got, []string{"k", "range[,)"}) {
		t.Fatalf("the keyspace's subscription saw %v", got)
	}
	cancel()
	<-done
	<-done
}

// fillKeyspace writes compressible records to keyspace "ks" of a new
// database in dir (no compression of its own) and flattens it; returns the
// tables' bytes.
func fillKeyspace(t *testing.T, dir string, c *Compression) int64 {
	t.Helper()
	db, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	ks, err := db.Keyspace("ks", &KeyspaceOptions{Compression: c})
	if err != nil {
		t.Fatal(err)
	}
	if got := ks.Compression(); !reflect.DeepEqual(got, c) {
		t.Fatalf("compression in force %v, want %v", got, c)
	}
	for i := 0; i < 2000; i++ {
		if err := ks.Set([]byte(fmt.Sprintf("key%05d", i)), jsonRecord(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flatten(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return tableBytes(t, dir)
}

func TestAZstdKeyspacesTablesShrinkAndKeepTheCodecAfterReopen(t *testing.T) {
	plainDir, zstdDir := t.TempDir(), t.TempDir()
	plain := fillKeyspace(t, plainDir, nil)
	zstd := fillKeyspace(t, zstdDir, CompressionZSTD.Ptr())
	if zstd <= 0 || zstd*2 >= plain {
		t.Fatalf("tables: zstd keyspace %d bytes, plain %d", zstd, plain)
	}
	db, err := Open(zstdDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ks := mustKeyspace(t, db, "ks", nil)
	if c := ks.Compression(); c == nil || *c != CompressionZSTD {
		t.Fatalf("after reopen the keyspace's codec is %v", c)
	}
	if got := ksGet(t, ks, "key01999"); !strings.HasPrefix(got, `{"id":1999,`) {
		t.Fatalf("key01999 holds %q", got)
	}
	if _, err := db.Keyspace("bad", &KeyspaceOptions{Compression: Compression(7).Ptr()}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("an unknown codec: %v", err)
	}
}

func TestAKeyspaceMultiGetReadsOnlyItsOwnKeys(t *testing.T) {
	db := openTemp(t)
	a := mustKeyspace(t, db, "a", nil)
	for _, k := range []string{"k1", "k3"} {
		if err := a.Set([]byte(k), []byte("a"+k)); err != nil {
			t.Fatal(err)
		}
	}
	mustSet(t, db, "k2", "d2")
	vals, err := a.MultiGet([][]byte{[]byte("k3"), []byte("k2"), []byte("k1")})
	if err != nil {
		t.Fatal(err)
	}
	if string(vals[0]) != "ak3" || vals[1] != nil || string(vals[2]) != "ak1" {
		t.Fatalf("keyspace multiget: %q", vals)
	}
	if _, err := a.MultiGet([][]byte{[]byte("k1"), nil}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("keyspace multiget with an empty key: %v", err)
	}
	// The refused batch changed nothing: every key still reads back.
	vals, err = a.MultiGet([][]byte{[]byte("k1"), []byte("k3")})
	if err != nil || string(vals[0]) != "ak1" || string(vals[1]) != "ak3" {
		t.Fatalf("after a refused multiget: %q, %v", vals, err)
	}
	if v, err := db.Get([]byte("k2")); err != nil || string(v) != "d2" {
		t.Fatalf("the default keyspace after a refused multiget: %q, %v", v, err)
	}
	if err := db.DropKeyspace("a"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.MultiGet([][]byte{[]byte("k1")}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("multiget on a dropped keyspace: %v", err)
	}
}
