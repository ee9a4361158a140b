package stores

import (
	"bytes"
	"fmt"
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
