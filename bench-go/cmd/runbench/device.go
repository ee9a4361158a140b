package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// Device holds the limits of the disk under the data directory, measured with
// direct I/O so that the page cache does not flatter them.
type Device struct {
	SeqWriteMBs  float64
	RandReadQD1  float64 // IOPS
	RandReadQD32 float64 // IOPS
	ReadLatQD1us float64 // mean µs
	FsyncP50us   float64
	FsyncP99us   float64
}

func (d Device) String() string {
	return fmt.Sprintf("sequential write %.0f MB/s (O_DIRECT, 1 MiB writes); 4 KiB random read %.0f IOPS at QD1 (%.0f µs), %.0f IOPS at QD32 (O_DIRECT); fsync after a 4 KiB write p50 %.0f µs, p99 %.0f µs",
		d.SeqWriteMBs, d.RandReadQD1, d.ReadLatQD1us, d.RandReadQD32, d.FsyncP50us, d.FsyncP99us)
}

// alignedBuf returns a buffer aligned to 4096 bytes, as O_DIRECT needs.
func alignedBuf(n int) []byte {
	b := make([]byte, n+4096)
	off := int(4096 - uintptr(unsafe.Pointer(&b[0]))%4096)
	if off == 4096 {
		off = 0
	}
	return b[off : off+n]
}

// measureDevice writes a scratch file of fileMiB in dir and measures it.
func measureDevice(dir string, fileMiB int) (Device, error) {
	var d Device
	path := filepath.Join(dir, "device-probe.tmp")
	defer os.Remove(path)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_TRUNC|syscall.O_DIRECT, 0o644)
	if err != nil {
		return d, fmt.Errorf("O_DIRECT open (the file system may not support direct I/O): %w", err)
	}
	defer f.Close()
	buf := alignedBuf(1 << 20)
	for i := range buf {
		buf[i] = byte(i * 31)
	}
	start := time.Now()
	for i := 0; i < fileMiB; i++ {
		if _, err := f.Write(buf); err != nil {
			return d, err
		}
	}
	if err := f.Sync(); err != nil {
		return d, err
	}
	d.SeqWriteMBs = float64(fileMiB) * (1 << 20) / 1e6 / time.Since(start).Seconds()

	blocks := int64(fileMiB) * 256
	randRead := func(workers, perWorker int) (float64, float64) {
		var wg sync.WaitGroup
		start := time.Now()
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				b := alignedBuf(4096)
				x := uint64(w)*2654435761 + 1
				for i := 0; i < perWorker; i++ {
					x ^= x << 13
					x ^= x >> 7
					x ^= x << 17
					_, _ = f.ReadAt(b, int64(x%uint64(blocks))*4096)
				}
			}(w)
		}
		wg.Wait()
		el := time.Since(start).Seconds()
		ops := float64(workers * perWorker)
		return ops / el, el / float64(perWorker) * 1e6
	}
	d.RandReadQD1, d.ReadLatQD1us = randRead(1, 3000)
	d.RandReadQD32, _ = randRead(32, 500)

	g, err := os.OpenFile(path+".fsync", os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return d, err
	}
	defer os.Remove(path + ".fsync")
	defer g.Close()
	lat := make([]float64, 0, 200)
	small := make([]byte, 4096)
	for i := 0; i < 200; i++ {
		t := time.Now()
		if _, err := g.Write(small); err != nil {
			return d, err
		}
		if err := syscall.Fdatasync(int(g.Fd())); err != nil {
			return d, err
		}
		lat = append(lat, float64(time.Since(t).Microseconds()))
	}
	sort.Float64s(lat)
	d.FsyncP50us, d.FsyncP99us = lat[len(lat)/2], lat[len(lat)*99/100]
	return d, nil
}
