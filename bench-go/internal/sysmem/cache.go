package sysmem

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"unsafe"

	"golang.org/x/sys/unix"
)

// EvictFiles drops the page cache of every non-empty regular file under
// dir, so that the next read of that engine's data comes from the device,
// and leaves all other cached data alone. Each file is fdatasynced first
// because POSIX_FADV_DONTNEED skips dirty pages. Pages an open process has
// mapped stay, so evict while the engine is closed. Files that vanish during
// the walk (compaction) are skipped. It returns the files and bytes covered.
func EvictFiles(dir string) (files int, bytes int64, err error) {
	err = eachFile(dir, func(f *os.File, size int64) error {
		if err := unix.Fdatasync(int(f.Fd())); err != nil {
			return fmt.Errorf("fdatasync: %w", err)
		}
		if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
			return fmt.Errorf("posix_fadvise(DONTNEED): %w", err)
		}
		files++
		bytes += size
		return nil
	})
	return files, bytes, err
}

// CachedBytes returns how many bytes of the regular files under dir are in
// the page cache (mincore on a read-only mapping of each; empty files are
// skipped), to check that EvictFiles worked.
func CachedBytes(dir string) (int64, error) {
	page := int64(os.Getpagesize())
	// A window bounds the mincore vector for very large files.
	const window = 1 << 30
	var total int64
	err := eachFile(dir, func(f *os.File, size int64) error {
		for off := int64(0); off < size; off += window {
			n := min(window, size-off)
			mem, err := unix.Mmap(int(f.Fd()), off, int(n), unix.PROT_READ, unix.MAP_SHARED)
			if err != nil {
				return fmt.Errorf("mmap: %w", err)
			}
			vec := make([]byte, (n+page-1)/page)
			err = mincore(mem, vec)
			unix.Munmap(mem)
			if err != nil {
				return fmt.Errorf("mincore: %w", err)
			}
			for i, v := range vec {
				if v&1 != 0 {
					total += min(page, n-int64(i)*page)
				}
			}
		}
		return nil
	})
	return total, err
}

// mincore fills vec with one byte per page of mem; x/sys/unix has no wrapper.
func mincore(mem, vec []byte) error {
	_, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(unsafe.SliceData(mem))), uintptr(len(mem)), uintptr(unsafe.Pointer(unsafe.SliceData(vec))))
	if e != 0 {
		return e
	}
	return nil
}

// eachFile calls fn with every non-empty regular file under dir, opened
// read-only; symbolic links are not followed.
func eachFile(dir string, fn func(f *os.File, size int64) error) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && path != dir {
				return nil
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		f, err := os.Open(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return err
		}
		if st.Size() == 0 {
			return nil
		}
		if err := fn(f, st.Size()); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		return nil
	})
}
