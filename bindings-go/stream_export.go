package sett

// The Go side of the backup and restore callbacks (stream.go). A file with
// //export may only declare C in its preamble, so the adapters live there.

/*
#include <stdint.h>
#include <stddef.h>
*/
import "C"

import (
	"errors"
	"io"
	"unsafe"
)

// recoverInto turns a panic of the caller's writer or reader into a stop of
// the C call (status 1), keeping the panic for withStream to re-raise.
func (s *stream) recoverInto(rc *C.int) {
	if v := recover(); v != nil {
		s.panicked, s.panicVal = true, v
		*rc = 1
	}
}

//export settGoStreamWrite
func settGoStreamWrite(ctx unsafe.Pointer, data *C.uint8_t, n C.size_t) (rc C.int) {
	s := streamOf(ctx)
	defer s.recoverInto(&rc)
	// data is valid for n bytes during this call; io.Writer must not keep it.
	if _, err := s.w.Write(unsafe.Slice((*byte)(unsafe.Pointer(data)), int(n))); err != nil {
		s.err = err
		return 1
	}
	return 0
}

//export settGoStreamRead
func settGoStreamRead(ctx unsafe.Pointer, buf *C.uint8_t, capacity C.size_t, got *C.size_t) (rc C.int) {
	s := streamOf(ctx)
	defer s.recoverInto(&rc)
	*got = 0
	if s.pending != nil {
		err := s.pending
		s.pending = nil
		if errors.Is(err, io.EOF) {
			return 0
		}
		s.err = err
		return 1
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(buf)), int(capacity))
	for {
		n, err := s.r.Read(b)
		if n > 0 {
			// Data first; an error that came with it is reported next time.
			s.pending = err
			*got = C.size_t(n)
			return 0
		}
		if errors.Is(err, io.EOF) {
			return 0
		}
		if err != nil {
			s.err = err
			return 1
		}
		// (0, nil): io.Reader allows it; read again.
	}
}
