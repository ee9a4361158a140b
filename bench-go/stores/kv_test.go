package stores

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
)

// Every KVBench store obeys the same contract, with and without fsync, and
// the persistent ones (and the baselines with an AOF) keep their data across
// a reopen.
func TestEveryStoreKeepsTheKVContract(t *testing.T) {
	for _, kind := range KVKinds {
		for _, fsync := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/fsync=%v", kind, fsync), func(t *testing.T) {
				checkKVContract(t, kind, KVOptions{AOF: true, Fsync: fsync, CacheBytes: 8 << 20})
			})
		}
	}
}

func checkKVContract(t *testing.T, kind string, o KVOptions) {
	dir := t.TempDir()
	s, err := OpenKV(kind, dir, o)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name() != kind {
		t.Fatalf("Name() = %q", s.Name())
	}
	var keys, vals [][]byte
	for i := 0; i < 100; i++ {
		keys = append(keys, []byte(fmt.Sprintf("p%02d/%03d", i/10, i)))
		vals = append(vals, bytes.Repeat([]byte{byte(i)}, 10+i*20))
	}
	// Out of order, so that a store that keeps the order it was given fails
	// the prefix checks below.
	for _, half := range [][2]int{{50, 100}, {0, 50}} {
		if err := s.BatchSet(keys[half[0]:half[1]], vals[half[0]:half[1]]); err != nil {
			t.Fatal(err)
		}
	}
	// Within one batch the later put of a key wins; a large value goes through.
	big := bytes.Repeat([]byte("0123456789abcdef"), 100<<10/16)
	if err := s.BatchSet([][]byte{[]byte("dup"), []byte("big"), []byte("dup")}, [][]byte{[]byte("first"), big, []byte("second")}); err != nil {
		t.Fatal(err)
	}
	if err := s.Set([]byte("single"), []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := s.Set([]byte("single"), []byte("two")); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string][]byte{"dup": []byte("second"), "big": big, "single": []byte("two"), string(keys[42]): vals[42]} {
		if v, ok, err := s.Get([]byte(k)); err != nil || !ok || !bytes.Equal(v, want) {
			t.Fatalf("get %q: %d bytes, found=%v, %v (want %d bytes)", k, len(v), ok, err, len(want))
		}
	}
	if _, ok, err := s.Get([]byte("absent")); err != nil || ok {
		t.Fatalf("absent key found=%v err=%v", ok, err)
	}
	got, err := s.BatchGet([][]byte{keys[1], []byte("absent"), keys[99]})
	if err != nil || len(got) != 3 || !bytes.Equal(got[0], vals[1]) || got[1] != nil || !bytes.Equal(got[2], vals[99]) {
		t.Fatalf("batch get: %d values, %v", len(got), err)
	}
	prefix := func(p string, limit int) []string {
		t.Helper()
		var seen []string
		n, err := s.Prefix([]byte(p), limit, func(k, v []byte) bool {
			i := 0
			if _, err := fmt.Sscanf(string(k[4:]), "%d", &i); err != nil || !bytes.Equal(v, vals[i]) {
				t.Fatalf("prefix %q: wrong value for %q", p, k)
			}
			seen = append(seen, string(k))
			return true
		})
		if err != nil || n != len(seen) {
			t.Fatalf("prefix %q: returned %d, saw %d: %v", p, n, len(seen), err)
		}
		return seen
	}
	if seen := prefix("p03/", 5); strings.Join(seen, " ") != "p03/030 p03/031 p03/032 p03/033 p03/034" {
		t.Fatalf("prefix p03/ limit 5: %v", seen)
	}
	if seen := prefix("p09/", 20); len(seen) != 10 || seen[0] != "p09/090" || seen[9] != "p09/099" {
		t.Fatalf("prefix p09/ limit 20: %v", seen)
	}
	if seen := prefix("q", 10); len(seen) != 0 {
		t.Fatalf("prefix without a match: %v", seen)
	}
	// fn returning false stops the scan at that key.
	calls := 0
	if n, err := s.Prefix([]byte("p05/"), 10, func(_, _ []byte) bool { calls++; return calls < 3 }); err != nil || n != 3 || calls != 3 {
		t.Fatalf("prefix stopped by fn: n=%d calls=%d %v", n, calls, err)
	}
	if err := s.Delete(keys[42]); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete([]byte("never-written")); err != nil {
		t.Fatalf("delete of a missing key: %v", err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = OpenKV(kind, dir, o)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.Get(keys[42]); ok {
		t.Fatal("deleted key is back after reopen")
	}
	for _, i := range []int{0, 7, 99} {
		if v, ok, _ := s.Get(keys[i]); !ok || !bytes.Equal(v, vals[i]) {
			t.Fatalf("key %s was lost across reopen", keys[i])
		}
	}
	if v, ok, _ := s.Get([]byte("dup")); !ok || string(v) != "second" {
		t.Fatalf("dup after reopen: %q %v", v, ok)
	}
	if err := s.Clear(); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.Prefix(nil, 1000, func(_, _ []byte) bool { return true }); n != 0 {
		t.Fatalf("%d keys left after Clear", n)
	}
	if _, ok, _ := s.Get(keys[7]); ok {
		t.Fatal("a key is still there after Clear")
	}
	// The store takes writes after Clear.
	if err := s.Set([]byte("after"), []byte("clear")); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := s.Get([]byte("after")); err != nil || !ok || string(v) != "clear" {
		t.Fatalf("write after Clear: %q %v %v", v, ok, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// The report describes every store from one table: none may be missing from it.
func TestEveryStoreIsDescribed(t *testing.T) {
	o := KVOptions{CacheBytes: 48 << 20}
	for _, kind := range KVKinds {
		for what, text := range map[string]string{"engine": KVEngine(kind), "cache": KVCacheSetting(kind, o), "flush": FlushMeaning(kind)} {
			if text == "" || strings.Contains(text, "unknown") {
				t.Errorf("%s: %s line %q", kind, what, text)
			}
		}
	}
	for _, kind := range []string{"sett", "rocksdb", "pebble", "goleveldb"} {
		if !strings.Contains(KVCacheSetting(kind, o), "48 MiB") {
			t.Errorf("%s: the cache line does not give the budget: %q", kind, KVCacheSetting(kind, o))
		}
	}
	if !strings.Contains(KVCacheSetting("rocksdb", KVOptions{}), "256 MiB") {
		t.Errorf("no budget given: %q", KVCacheSetting("rocksdb", KVOptions{}))
	}
	if !strings.Contains(FlushMeaning("nosuchstore"), "unknown") {
		t.Error("an unknown store is described")
	}
}

// The budget reaches each engine that has a cache of its own: read back from
// sett and RocksDB, and from the options that open Pebble and goleveldb.
func TestTheCacheBudgetReachesTheEngines(t *testing.T) {
	for _, budget := range []int64{0, 48 << 20} {
		want := budget
		if want == 0 {
			want = DefaultCacheBytes
		}
		for _, kind := range []string{"sett", "rocksdb"} {
			s, err := OpenKV(kind, t.TempDir(), KVOptions{CacheBytes: budget})
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.(kvCacheReader).cacheCapacity()
			if err != nil || got != want {
				t.Errorf("%s with budget %d: capacity %d (want %d) %v", kind, budget, got, want, err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		}
		opts, _, err := pebbleOptions(Options{CacheBytes: KVOptions{CacheBytes: budget}.cacheBytes()})
		if err != nil {
			t.Fatal(err)
		}
		if got := opts.Cache.MaxSize(); got != want {
			t.Errorf("pebble with budget %d: cache %d (want %d)", budget, got, want)
		}
		opts.Cache.Unref()
		if got := levelOptions(KVOptions{CacheBytes: budget}).BlockCacheCapacity; int64(got) != want {
			t.Errorf("goleveldb with budget %d: block cache %d (want %d)", budget, got, want)
		}
	}
}

// The versions the report prints are the ones go.mod requires.
func TestModuleVersionsAreGoMods(t *testing.T) {
	mod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for path, v := range kvModuleVersions {
		if !strings.Contains(string(mod), "\t"+path+" "+v+"\n") && !strings.Contains(string(mod), "\t"+path+" "+v+" ") {
			t.Errorf("go.mod does not require %s %s", path, v)
		}
	}
}
