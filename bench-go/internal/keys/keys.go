// Package keys holds what populate and the benchmarks must agree on: the key
// format of badger-bench, the value each key holds, and where each engine's
// data lives.
package keys

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
)

// Key is badger-bench's key: vsz=%05d-k=%010d.
func Key(valsz int, k int64) []byte {
	return []byte(fmt.Sprintf("vsz=%05d-k=%010d", valsz, k))
}

// AppendKey appends Key(valsz, k) to dst without allocating.
func AppendKey(dst []byte, valsz int, k int64) []byte {
	dst = append(dst, "vsz="...)
	dst = appendPadded(dst, int64(valsz), 5)
	dst = append(dst, "-k="...)
	return appendPadded(dst, k, 10)
}

func appendPadded(dst []byte, v int64, width int) []byte {
	var digits [20]byte
	i := len(digits)
	for v > 0 || i == len(digits) {
		i--
		digits[i] = byte('0' + v%10)
		v /= 10
	}
	for n := len(digits) - i; n < width; n++ {
		dst = append(dst, '0')
	}
	return append(dst, digits[i:]...)
}

// Index parses k back out of a key made by AppendKey; ok is false for any other shape.
func Index(key []byte) (k int64, ok bool) {
	if len(key) < 13 || string(key[len(key)-13:len(key)-10]) != "-k=" {
		return 0, false
	}
	for _, c := range key[len(key)-10:] {
		if c < '0' || c > '9' {
			return 0, false
		}
		k = k*10 + int64(c-'0')
	}
	return k, true
}

// The value of key k is a function of (valsz, k): random-looking, incompressible
// bytes from a counter-based generator (splitmix64's finalizer over seed + word
// index). Writers that draw the same k write the same value, so every engine ends
// with the same data whatever the order of concurrent batches, and any word of a
// value can be checked without generating the rest.
func seed(valsz int, k int64) uint64 {
	return uint64(k)*0x9e3779b97f4a7c15 ^ uint64(valsz)<<48 ^ 0x5eed5eed5eed5eed
}

func word(s uint64, i int) uint64 {
	z := s + uint64(i+1)*0xbf58476d1ce4e5b9
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// FillValue writes the value of key k into v (len(v) is the value size).
func FillValue(v []byte, valsz int, k int64) {
	s := seed(valsz, k)
	i := 0
	for ; i+8 <= len(v); i += 8 {
		binary.LittleEndian.PutUint64(v[i:], word(s, i/8))
	}
	if i < len(v) {
		var last [8]byte
		binary.LittleEndian.PutUint64(last[:], word(s, i/8))
		copy(v[i:], last[:])
	}
}

// QuickCheckValue checks v's length and its first and last words against the
// value of key k: cheap enough for every read of a benchmark.
func QuickCheckValue(v []byte, valsz int, k int64) bool {
	if len(v) != valsz {
		return false
	}
	if valsz < 16 {
		return FullCheckValue(v, valsz, k)
	}
	s := seed(valsz, k)
	last := (valsz - 8) / 8 * 8
	return binary.LittleEndian.Uint64(v) == word(s, 0) &&
		binary.LittleEndian.Uint64(v[last:]) == word(s, last/8)
}

// FullCheckValue compares every byte of v with the value of key k.
func FullCheckValue(v []byte, valsz int, k int64) bool {
	if len(v) != valsz {
		return false
	}
	s := seed(valsz, k)
	i := 0
	for ; i+8 <= len(v); i += 8 {
		if binary.LittleEndian.Uint64(v[i:]) != word(s, i/8) {
			return false
		}
	}
	if i < len(v) {
		var last [8]byte
		binary.LittleEndian.PutUint64(last[:], word(s, i/8))
		for j := i; j < len(v); j++ {
			if v[j] != last[j-i] {
				return false
			}
		}
	}
	return true
}

// WriteIndex is the key index written by the j-th entry of populate (entry i of
// batch b is j = b·batch + i): uniform with replacement, and the same sequence
// whichever writer takes which batch, so every engine is given the same keys.
func WriteIndex(j uint64, total int64) int64 {
	return int64(word(0x3717e5eed, int(j)) % uint64(total))
}

// ReadIndex is the key index read by the i-th operation of a random-read phase:
// the same sequence for every engine, so their found counts must agree.
func ReadIndex(i uint64, total int64) int64 {
	return int64(word(0x7ead5eed, int(i)) % uint64(total))
}

// Dir is where engine kind keeps the data set of valsz-byte values under base.
func Dir(base, kind string, valsz int) string {
	return filepath.Join(base, fmt.Sprintf("%s-vsz%d", kind, valsz))
}

// Count is the number of writes for keysMil million keys (at least 1).
func Count(keysMil float64) int64 {
	n := int64(keysMil * 1e6)
	if n < 1 {
		n = 1
	}
	return n
}
