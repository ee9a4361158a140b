package sysmem

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Device holds the limits of the disk under a directory, measured with
// O_DIRECT so that the page cache does not flatter them. MB is 10^6 bytes.
type Device struct {
	FileBytes   int64   // size of the scratch file
	SeqWriteMBs float64 // 1 MiB writes, then fdatasync
	SeqReadMBs  float64 // 1 MiB reads
	QD1IOPS     float64 // 4 KiB random reads, one at a time
	QD1MeanUs   float64
	QD1P50Us    float64
	QD1P99Us    float64
	Readers     int     // concurrent readers for the next two
	ParIOPS     float64 // 4 KiB random reads, Readers at a time
	ParMeanUs   float64
	FsyncP50Us  float64 // fdatasync after a 4 KiB append, as a WAL does
	FsyncP99Us  float64
	// The block device's read_ahead_kb (-1: unknown): what the kernel reads
	// around a page fault in a file mapping that is not advised MADV_RANDOM,
	// so it bounds what an engine reading values through mappings pays per
	// random read.
	ReadAheadKiB int64
}

func (d Device) String() string {
	return fmt.Sprintf("O_DIRECT on a %d MiB file: seq write %.0f MB/s, seq read %.0f MB/s (1 MiB I/Os); "+
		"4 KiB random read QD1 %.0f IOPS (mean %.0f µs, p50 %.0f µs, p99 %.0f µs), %d readers %.0f IOPS (mean %.0f µs); "+
		"fdatasync after a 4 KiB append p50 %.0f µs, p99 %.0f µs; %s",
		d.FileBytes>>20, d.SeqWriteMBs, d.SeqReadMBs, d.QD1IOPS, d.QD1MeanUs, d.QD1P50Us, d.QD1P99Us,
		d.Readers, d.ParIOPS, d.ParMeanUs, d.FsyncP50Us, d.FsyncP99Us, readAheadText(d.ReadAheadKiB))
}

func readAheadText(kib int64) string {
	if kib < 0 {
		return "read-ahead unknown"
	}
	return fmt.Sprintf("read-ahead %d KiB (read_ahead_kb: read around a fault in a mapping not advised MADV_RANDOM)", kib)
}

// ReadAheadKiB is read_ahead_kb of the block device under dir, or -1 if sysfs
// does not say (a partition's queue is its disk's).
func ReadAheadKiB(dir string) int64 {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return -1
	}
	base := fmt.Sprintf("/sys/dev/block/%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev))
	for _, p := range []string{base + "/queue/read_ahead_kb", base + "/../queue/read_ahead_kb"} {
		if b, err := os.ReadFile(p); err == nil {
			var n int64
			if _, err := fmt.Sscan(string(b), &n); err == nil {
				return n
			}
		}
	}
	return -1
}

const (
	mib       = 1 << 20
	blockSize = 4096
	syncs     = 200
)

// ProbeDevice writes a scratch file of fileBytes (rounded down to whole MiB,
// at least 1) in dir and measures the device with O_DIRECT, each random-read
// phase for readDur. The file is removed in every case. O_DIRECT bypasses
// the page cache, so a small file is fine for tests; in the large regime
// make it larger than the memory left so that no cache below the guest (a
// hypervisor's, a controller's) flatters the figures either.
func ProbeDevice(dir string, fileBytes int64, readers int, readDur time.Duration) (Device, error) {
	d := Device{FileBytes: fileBytes / mib * mib, Readers: readers, ReadAheadKiB: ReadAheadKiB(dir)}
	if d.FileBytes < mib || readers < 1 || readDur <= 0 {
		return d, fmt.Errorf("sysmem: ProbeDevice: need fileBytes ≥ 1 MiB, readers ≥ 1 and readDur > 0 (got %d, %d, %v)", fileBytes, readers, readDur)
	}
	// Since Linux 6.6 tmpfs accepts O_DIRECT, so its type is checked too.
	if mem, err := memoryBacked(dir); err != nil {
		return d, err
	} else if mem {
		return d, fmt.Errorf("sysmem: %s is on tmpfs or ramfs: there is no device under it to probe with O_DIRECT", dir)
	}
	path := filepath.Join(dir, fmt.Sprintf("sysmem-probe-%d.tmp", os.Getpid()))
	fd, err := unix.Open(path, unix.O_CREAT|unix.O_EXCL|unix.O_RDWR|unix.O_DIRECT|unix.O_CLOEXEC, 0o600)
	if errors.Is(err, unix.EINVAL) {
		return d, fmt.Errorf("sysmem: %s does not support O_DIRECT (tmpfs?): %w", dir, err)
	}
	if err != nil {
		return d, fmt.Errorf("sysmem: creating %s: %w", path, err)
	}
	defer os.Remove(path)
	defer unix.Close(fd)

	// Anonymous mappings are page aligned, as O_DIRECT requires.
	buf, err := unix.Mmap(-1, 0, mib, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return d, err
	}
	defer unix.Munmap(buf)
	// Random contents, so that no compressing or deduplicating layer helps.
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < len(buf); i += 8 {
		v := rng.Uint64()
		for j := range 8 {
			buf[i+j] = byte(v >> (8 * j))
		}
	}

	start := time.Now()
	for off := int64(0); off < d.FileBytes; off += mib {
		if err := pwrite(fd, buf, off); err != nil {
			return d, probeErr("sequential write", dir, err)
		}
	}
	if err := unix.Fdatasync(fd); err != nil {
		return d, probeErr("fdatasync", dir, err)
	}
	d.SeqWriteMBs = float64(d.FileBytes) / 1e6 / time.Since(start).Seconds()

	start = time.Now()
	for off := int64(0); off < d.FileBytes; off += mib {
		if err := pread(fd, buf, off); err != nil {
			return d, probeErr("sequential read", dir, err)
		}
	}
	d.SeqReadMBs = float64(d.FileBytes) / 1e6 / time.Since(start).Seconds()

	blocks := d.FileBytes / blockSize
	lat := make([]time.Duration, 0, 1<<16)
	end := time.Now().Add(readDur)
	start = time.Now()
	for time.Now().Before(end) {
		t := time.Now()
		if err := pread(fd, buf[:blockSize], rng.Int64N(blocks)*blockSize); err != nil {
			return d, probeErr("random read", dir, err)
		}
		lat = append(lat, time.Since(t))
	}
	d.QD1IOPS = float64(len(lat)) / time.Since(start).Seconds()
	d.QD1MeanUs, d.QD1P50Us, d.QD1P99Us = stats(lat)

	var ops, busy atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	end = time.Now().Add(readDur)
	start = time.Now()
	for r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, err := unix.Mmap(-1, 0, blockSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
			if err != nil {
				once.Do(func() { firstErr = err })
				return
			}
			defer unix.Munmap(b)
			rr := rand.New(rand.NewPCG(uint64(r)+3, 4))
			for time.Now().Before(end) {
				t := time.Now()
				if err := pread(fd, b, rr.Int64N(blocks)*blockSize); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				busy.Add(int64(time.Since(t)))
				ops.Add(1)
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return d, probeErr("concurrent random read", dir, firstErr)
	}
	d.ParIOPS = float64(ops.Load()) / time.Since(start).Seconds()
	if n := ops.Load(); n > 0 {
		d.ParMeanUs = float64(busy.Load()) / float64(n) / 1e3
	}

	lat = lat[:0]
	for i := range int64(syncs) {
		if err := pwrite(fd, buf[:blockSize], d.FileBytes+i*blockSize); err != nil {
			return d, probeErr("append", dir, err)
		}
		t := time.Now()
		if err := unix.Fdatasync(fd); err != nil {
			return d, probeErr("fdatasync", dir, err)
		}
		lat = append(lat, time.Since(t))
	}
	_, d.FsyncP50Us, d.FsyncP99Us = stats(lat)
	return d, nil
}

// pread and pwrite treat a short I/O as an error: the probe's I/Os are all
// aligned and inside the file, so a short one means something is wrong.
func pread(fd int, b []byte, off int64) error {
	n, err := unix.Pread(fd, b, off)
	if err == nil && n != len(b) {
		err = fmt.Errorf("short read: %d of %d bytes at %d", n, len(b), off)
	}
	return err
}

func pwrite(fd int, b []byte, off int64) error {
	n, err := unix.Pwrite(fd, b, off)
	if err == nil && n != len(b) {
		err = fmt.Errorf("short write: %d of %d bytes at %d", n, len(b), off)
	}
	return err
}

// memoryBacked reports whether dir is on tmpfs or ramfs.
func memoryBacked(dir string) (bool, error) {
	var s unix.Statfs_t
	if err := unix.Statfs(dir, &s); err != nil {
		return false, fmt.Errorf("sysmem: statfs %s: %w", dir, err)
	}
	return s.Type == unix.TMPFS_MAGIC || s.Type == unix.RAMFS_MAGIC, nil
}

func probeErr(phase, dir string, err error) error {
	return fmt.Errorf("sysmem: device probe in %s: %s: %w", dir, phase, err)
}

// stats returns the mean, p50 and p99 of lat in µs; it sorts lat.
func stats(lat []time.Duration) (mean, p50, p99 float64) {
	if len(lat) == 0 {
		return 0, 0, 0
	}
	slices.Sort(lat)
	var sum time.Duration
	for _, l := range lat {
		sum += l
	}
	us := func(l time.Duration) float64 { return float64(l) / 1e3 }
	return us(sum) / float64(len(lat)), us(lat[len(lat)*50/100]), us(lat[min(len(lat)-1, len(lat)*99/100)])
}
