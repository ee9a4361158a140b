package stores

import (
	"bufio"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/google/btree"
)

// memKV is KVBench's in-memory baseline: a Go map (prefix scans sort the
// matching keys) or a B-tree, behind one RWMutex, with an optional append-only
// file that is replayed at open.
type memKV struct {
	mu    sync.RWMutex
	name  string
	m     map[string][]byte
	tree  *btree.BTreeG[memItem]
	aof   *os.File
	w     *bufio.Writer
	fsync bool
}

type memItem struct {
	k string
	v []byte
}

func lessItem(a, b memItem) bool { return a.k < b.k }

func openMemKV(dir string, o KVOptions, tree bool) (KV, error) {
	s := &memKV{name: "map", fsync: o.Fsync}
	if tree {
		s.name = "btree"
		s.tree = btree.NewG(32, lessItem)
	} else {
		s.m = map[string][]byte{}
	}
	if o.AOF {
		f, err := os.OpenFile(filepath.Join(dir, s.name+".aof"), os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o644)
		if err != nil {
			return nil, err
		}
		if err := s.replay(f); err != nil {
			f.Close()
			return nil, err
		}
		s.aof, s.w = f, bufio.NewWriterSize(f, 1<<20)
	}
	return s, nil
}

// AOF record: op (1 set, 2 delete, 3 clear) | u32 klen | u32 vlen | key | value.
func (s *memKV) replay(f *os.File) error {
	r := bufio.NewReader(f)
	var h [9]byte
	for {
		if _, err := io.ReadFull(r, h[:]); err != nil {
			return nil // a torn tail ends the log
		}
		k := make([]byte, binary.LittleEndian.Uint32(h[1:5]))
		v := make([]byte, binary.LittleEndian.Uint32(h[5:9]))
		if _, err := io.ReadFull(r, k); err != nil {
			return nil
		}
		if _, err := io.ReadFull(r, v); err != nil {
			return nil
		}
		switch h[0] {
		case 1:
			s.put(string(k), v)
		case 2:
			s.del(string(k))
		case 3:
			s.clear()
		}
	}
}

func (s *memKV) log(op byte, k, v []byte) error {
	if s.w == nil {
		return nil
	}
	var h [9]byte
	h[0] = op
	binary.LittleEndian.PutUint32(h[1:5], uint32(len(k)))
	binary.LittleEndian.PutUint32(h[5:9], uint32(len(v)))
	s.w.Write(h[:])
	s.w.Write(k)
	s.w.Write(v)
	if s.fsync {
		if err := s.w.Flush(); err != nil {
			return err
		}
		return s.aof.Sync()
	}
	return nil
}

func (s *memKV) put(k string, v []byte) {
	if s.tree != nil {
		s.tree.ReplaceOrInsert(memItem{k, v})
	} else {
		s.m[k] = v
	}
}

func (s *memKV) del(k string) {
	if s.tree != nil {
		s.tree.Delete(memItem{k: k})
	} else {
		delete(s.m, k)
	}
}

func (s *memKV) clear() {
	if s.tree != nil {
		s.tree.Clear(false)
	} else {
		s.m = map[string][]byte{}
	}
}

func (s *memKV) get(k string) ([]byte, bool) {
	if s.tree != nil {
		it, ok := s.tree.Get(memItem{k: k})
		return it.v, ok
	}
	v, ok := s.m[k]
	return v, ok
}

func (s *memKV) Name() string { return s.name }

func (s *memKV) Set(key, value []byte) error {
	v := append([]byte(nil), value...)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.put(string(key), v)
	return s.log(1, key, value)
}

func (s *memKV) BatchSet(keys, vals [][]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range keys {
		s.put(string(keys[i]), append([]byte(nil), vals[i]...))
		if s.w != nil {
			s.fsyncOff(func() error { return s.log(1, keys[i], vals[i]) })
		}
	}
	if s.fsync && s.w != nil {
		if err := s.w.Flush(); err != nil {
			return err
		}
		return s.aof.Sync()
	}
	return nil
}

// fsyncOff runs f with per-record fsync off (a batch syncs once at its end).
func (s *memKV) fsyncOff(f func() error) {
	was := s.fsync
	s.fsync = false
	_ = f()
	s.fsync = was
}

func (s *memKV) Get(key []byte) ([]byte, bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, ok := s.get(string(key))
	if !ok {
		return nil, false, nil
	}
	return append([]byte(nil), v...), true, nil
}

func (s *memKV) BatchGet(keys [][]byte) ([][]byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([][]byte, len(keys))
	for i, k := range keys {
		if v, ok := s.get(string(k)); ok {
			out[i] = append([]byte(nil), v...)
		}
	}
	return out, nil
}

func (s *memKV) Delete(key []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.del(string(key))
	return s.log(2, key, nil)
}

func (s *memKV) Clear() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clear()
	return s.log(3, nil, nil)
}

func (s *memKV) Prefix(prefix []byte, limit int, fn func(k, v []byte) bool) (int, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	p := string(prefix)
	n := 0
	if s.tree != nil {
		s.tree.AscendGreaterOrEqual(memItem{k: p}, func(it memItem) bool {
			if n >= limit || len(it.k) < len(p) || it.k[:len(p)] != p {
				return false
			}
			n++
			return fn([]byte(it.k), it.v)
		})
		return n, nil
	}
	// A map has no order: collect the matching keys and sort them (what makes
	// prefix scans on the map baseline slow, as in KVBench).
	var keys []string
	for k := range s.m {
		if len(k) >= len(p) && k[:len(p)] == p {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if n >= limit {
			break
		}
		n++
		if !fn([]byte(k), s.m[k]) {
			break
		}
	}
	return n, nil
}

func (s *memKV) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w == nil {
		return nil
	}
	if err := s.w.Flush(); err != nil {
		return err
	}
	return s.aof.Sync()
}

func (s *memKV) Close() error {
	if err := s.Flush(); err != nil {
		return err
	}
	if s.aof != nil {
		return s.aof.Close()
	}
	return nil
}
