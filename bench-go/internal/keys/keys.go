// Package keys holds what populate and the benchmarks must agree on: the key
// format of badger-bench and where each engine's data lives.
package keys

import (
	"fmt"
	"path/filepath"
)

// Key is badger-bench's key: vsz=%05d-k=%010d.
func Key(valsz int, k int64) []byte {
	return []byte(fmt.Sprintf("vsz=%05d-k=%010d", valsz, k))
}

// AppendKey appends Key(valsz, k) to dst without allocating.
func AppendKey(dst []byte, valsz int, k int64) []byte {
	return fmt.Appendf(dst, "vsz=%05d-k=%010d", valsz, k)
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
