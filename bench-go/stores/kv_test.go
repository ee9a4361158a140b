package stores

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
)

// Every KVBench store obeys the same contract, and the persistent ones (and the
// baselines with an AOF) keep their data across a reopen.
func TestEveryStoreKeepsTheKVContract(t *testing.T) {
	for _, kind := range KVKinds {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			o := KVOptions{AOF: true}
			s, err := OpenKV(kind, dir, o)
			if err != nil {
				t.Fatal(err)
			}
			var keys, vals [][]byte
			for i := 0; i < 100; i++ {
				keys = append(keys, []byte(fmt.Sprintf("p%02d/%03d", i/10, i)))
				vals = append(vals, bytes.Repeat([]byte{byte(i)}, 10+i*20))
			}
			if err := s.BatchSet(keys, vals); err != nil {
				t.Fatal(err)
			}
			if err := s.Set([]byte("single"), []byte("one")); err != nil {
				t.Fatal(err)
			}
			if v, ok, err := s.Get(keys[42]); err != nil || !ok || !bytes.Equal(v, vals[42]) {
				t.Fatalf("get: %v %v", ok, err)
			}
			if _, ok, err := s.Get([]byte("absent")); err != nil || ok {
				t.Fatalf("absent key found=%v err=%v", ok, err)
			}
			got, err := s.BatchGet([][]byte{keys[1], []byte("absent"), keys[99]})
			if err != nil || !bytes.Equal(got[0], vals[1]) || got[1] != nil || !bytes.Equal(got[2], vals[99]) {
				t.Fatalf("batch get: %v", err)
			}
			var seen []string
			n, err := s.Prefix([]byte("p03/"), 5, func(k, _ []byte) bool {
				seen = append(seen, string(k))
				return true
			})
			if err != nil || n != 5 || seen[0] != "p03/030" || seen[4] != "p03/034" {
				t.Fatalf("prefix: %d %v %v", n, seen, err)
			}
			if err := s.Delete(keys[42]); err != nil {
				t.Fatal(err)
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
			if v, ok, _ := s.Get(keys[7]); !ok || !bytes.Equal(v, vals[7]) {
				t.Fatal("a key was lost across reopen")
			}
			if err := s.Clear(); err != nil {
				t.Fatal(err)
			}
			if n, _ := s.Prefix(nil, 1000, func(_, _ []byte) bool { return true }); n != 0 {
				t.Fatalf("%d keys left after Clear", n)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		})
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
