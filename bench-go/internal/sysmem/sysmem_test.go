package sysmem

import (
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// diskDir returns a temporary directory on a real device: t.TempDir, or one
// under /work when the temp dir is memory-backed.
func diskDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	mem, err := memoryBacked(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !mem {
		return dir
	}
	dir, err = os.MkdirTemp("/work", "sysmem-test-")
	if err != nil {
		t.Skipf("temp dir is memory-backed and /work is unusable: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if mem, err := memoryBacked(dir); err != nil || mem {
		t.Skip("both the temp dir and /work are memory-backed")
	}
	return dir
}

// writeFile writes n random bytes to path, and fsyncs it if sync.
func writeFile(t *testing.T, path string, n int64, sync bool) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := io.CopyN(f, rand.Reader, n); err != nil {
		t.Fatal(err)
	}
	if !sync {
		return
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) {
	t.Helper()
	if _, err := os.ReadFile(path); err != nil {
		t.Fatal(err)
	}
}

func TestMemInfoAndRSSFollowTouchedMemory(t *testing.T) {
	total, avail, err := MemInfo()
	if err != nil {
		t.Fatal(err)
	}
	if total <= 0 || avail <= 0 || avail > total {
		t.Fatalf("MemInfo() = %d, %d", total, avail)
	}
	before, err := RSS(0)
	if err != nil {
		t.Fatal(err)
	}
	const n = 64 << 20
	mem, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	for i := 0; i < n; i += 4096 {
		mem[i] = 1
	}
	after, err := RSS(0)
	if err != nil {
		t.Fatal(err)
	}
	peak, err := PeakRSS(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if after-before < n*9/10 {
		t.Errorf("RSS grew by %d MiB after touching %d MiB", (after-before)>>20, n>>20)
	}
	if peak < after {
		t.Errorf("PeakRSS %d < RSS %d", peak, after)
	}
	if _, err := RSS(1 << 30); err == nil {
		t.Error("RSS of a pid that cannot exist gave no error")
	}
}

func TestEvictFilesDropsThatDirsPagesOnly(t *testing.T) {
	root := diskDir(t)
	engine, other := filepath.Join(root, "engine"), filepath.Join(root, "other")
	for _, d := range []string{engine, filepath.Join(engine, "sub"), other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(engine, "big"), 64<<20, true)
	// Left dirty: POSIX_FADV_DONTNEED alone would keep its pages.
	writeFile(t, filepath.Join(engine, "sub", "small"), 4<<20, false)
	writeFile(t, filepath.Join(other, "kept"), 8<<20, true)
	if err := os.WriteFile(filepath.Join(engine, "empty"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	readFile(t, filepath.Join(engine, "big"))
	readFile(t, filepath.Join(engine, "sub", "small"))
	readFile(t, filepath.Join(other, "kept"))

	cached, err := CachedBytes(engine)
	if err != nil {
		t.Fatal(err)
	}
	if cached < 60<<20 {
		t.Fatalf("CachedBytes after reading 68 MiB = %d MiB", cached>>20)
	}
	files, n, err := EvictFiles(engine)
	if err != nil {
		t.Fatal(err)
	}
	if files != 2 || n != 68<<20 {
		t.Errorf("EvictFiles = %d files, %d bytes; want 2, %d", files, n, 68<<20)
	}
	if cached, err = CachedBytes(engine); err != nil {
		t.Fatal(err)
	}
	if cached > 1<<20 {
		t.Errorf("CachedBytes after EvictFiles = %d KiB, want about 0", cached>>10)
	}
	kept, err := CachedBytes(other)
	if err != nil {
		t.Fatal(err)
	}
	if kept < 7<<20 {
		t.Errorf("another dir's file lost its pages: %d MiB of 8 MiB cached", kept>>20)
	}
}

// directIO writes n bytes to path with O_DIRECT and fdatasync, then reads
// them back with O_DIRECT.
func directIO(t *testing.T, path string, n int) (write, read func()) {
	buf, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(buf) })
	rand.Read(buf)
	fd, err := unix.Open(path, unix.O_CREAT|unix.O_RDWR|unix.O_DIRECT|unix.O_CLOEXEC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	write = func() {
		if err := pwrite(fd, buf, 0); err != nil {
			t.Fatal(err)
		}
		if err := unix.Fdatasync(fd); err != nil {
			t.Fatal(err)
		}
	}
	read = func() {
		if err := pread(fd, buf, 0); err != nil {
			t.Fatal(err)
		}
	}
	return write, read
}

func TestDiskStatsCountDirectWritesAndReads(t *testing.T) {
	dir := diskDir(t)
	const n = 4 << 20
	write, read := directIO(t, filepath.Join(dir, "f"), n)

	c0, err := DiskStats(dir)
	if err != nil {
		t.Fatal(err)
	}
	write()
	c1, err := DiskStats(dir)
	if err != nil {
		t.Fatal(err)
	}
	read()
	c2, err := DiskStats(dir)
	if err != nil {
		t.Fatal(err)
	}
	w, r := c1.Sub(c0), c2.Sub(c1)
	t.Logf("device %s (%d:%d): write delta %+v; read delta %+v", c0.Device, c0.Major, c0.Minor, w, r)
	if w.WritesCompleted == 0 || w.WriteBytes() < n {
		t.Errorf("after writing %d bytes with O_DIRECT and fdatasync: %d writes, %d bytes", n, w.WritesCompleted, w.WriteBytes())
	}
	if r.ReadsCompleted == 0 || r.ReadBytes() < n {
		t.Errorf("after reading %d bytes with O_DIRECT: %d reads, %d bytes", n, r.ReadsCompleted, r.ReadBytes())
	}
}

func TestDiskStatsRejectsAnonymousDevices(t *testing.T) {
	_, err := DiskStats("/proc")
	if err == nil || !strings.Contains(err.Error(), " 0:") {
		t.Errorf("DiskStats(/proc) = %v, want an error naming device 0:N", err)
	}
}

func TestDiskCountersSubKeepsTheGaugeAndClamps(t *testing.T) {
	a := DiskCounters{ReadsCompleted: 10, SectorsRead: 100, WritesCompleted: 5, SectorsWritten: 8, IOsInProgress: 3}
	b := DiskCounters{ReadsCompleted: 15, SectorsRead: 300, WritesCompleted: 4, SectorsWritten: 16, IOsInProgress: 1}
	d := b.Sub(a)
	if d.ReadsCompleted != 5 || d.ReadBytes() != 200*512 || d.WritesCompleted != 0 || d.WriteBytes() != 8*512 || d.IOsInProgress != 1 {
		t.Errorf("Sub = %+v", d)
	}
}

func TestFreeBytesFallsWhenAFileIsAllocated(t *testing.T) {
	dir := diskDir(t)
	const n = 256 << 20
	before, err := FreeBytes(dir)
	if err != nil {
		t.Fatal(err)
	}
	if before < 2*n {
		t.Skipf("only %d MiB free", before>>20)
	}
	f, err := os.Create(filepath.Join(dir, "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Fallocate(int(f.Fd()), 0, 0, n); err != nil {
		t.Skipf("fallocate: %v", err)
	}
	after, err := FreeBytes(dir)
	if err != nil {
		t.Fatal(err)
	}
	if before-after < n*3/4 {
		t.Errorf("FreeBytes fell by %d MiB after allocating %d MiB", (before-after)>>20, n>>20)
	}
}

func TestProbeDeviceGivesPositiveFiguresAndRemovesItsFile(t *testing.T) {
	dir := diskDir(t)
	start := time.Now()
	d, err := ProbeDevice(dir, 64<<20, 4, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%v in %v", d, time.Since(start))
	for name, v := range map[string]float64{
		"SeqWriteMBs": d.SeqWriteMBs, "SeqReadMBs": d.SeqReadMBs,
		"QD1IOPS": d.QD1IOPS, "QD1MeanUs": d.QD1MeanUs, "QD1P50Us": d.QD1P50Us, "QD1P99Us": d.QD1P99Us,
		"ParIOPS": d.ParIOPS, "ParMeanUs": d.ParMeanUs, "FsyncP50Us": d.FsyncP50Us, "FsyncP99Us": d.FsyncP99Us,
	} {
		if !(v > 0) {
			t.Errorf("%s = %v", name, v)
		}
	}
	if d.QD1P99Us < d.QD1P50Us || d.FsyncP99Us < d.FsyncP50Us {
		t.Errorf("p99 below p50: %v", d)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("ProbeDevice left %d files in %s", len(left), dir)
	}
}

func TestProbeDeviceRefusesTmpfs(t *testing.T) {
	const dir = "/dev/shm"
	if mem, err := memoryBacked(dir); err != nil || !mem {
		t.Skipf("%s is not tmpfs here", dir)
	}
	before, _ := os.ReadDir(dir)
	_, err := ProbeDevice(dir, 4<<20, 1, 10*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "tmpfs") {
		t.Errorf("ProbeDevice(%s) = %v, want an error naming tmpfs", dir, err)
	}
	if after, _ := os.ReadDir(dir); len(after) != len(before) {
		t.Errorf("ProbeDevice left a file in %s", dir)
	}
}

func TestReadAheadIsReadFromSysfsForTheDeviceUnderADirectory(t *testing.T) {
	dir := t.TempDir()
	kib := ReadAheadKiB(dir)
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(fmt.Sprintf("/sys/dev/block/%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev))); err != nil {
		// tmpfs and overlay have no block device: the probe says "unknown".
		if kib != -1 {
			t.Fatalf("no block device under %s, yet read-ahead %d KiB", dir, kib)
		}
		if got := readAheadText(kib); got != "read-ahead unknown" {
			t.Fatalf("text %q", got)
		}
		return
	}
	if kib < 0 {
		t.Fatalf("block device under %s has a sysfs entry, yet read-ahead was not read", dir)
	}
}
