package sett

/*
#include <stdint.h>
#include <stdlib.h>
#include <sett.h>

// The Go callbacks of stream_export.go. cgo's prototypes of exported
// functions have no const, so C calls them through these two adapters, whose
// types are sett.h's sett_write_fn and sett_read_fn.
extern int settGoStreamWrite(void *ctx, uint8_t *data, size_t len);
extern int settGoStreamRead(void *ctx, uint8_t *buf, size_t cap, size_t *len);

static int sett_go_write_adapter(void *ctx, const uint8_t *data, size_t len) {
	return settGoStreamWrite(ctx, (uint8_t *)data, len);
}

static int sett_go_read_adapter(void *ctx, uint8_t *buf, size_t cap, size_t *len) {
	return settGoStreamRead(ctx, buf, cap, len);
}

// Go refers to the adapters through these (it cannot take the address of a
// static function).
static sett_write_fn goWriteFn(void) { return sett_go_write_adapter; }
static sett_read_fn goReadFn(void) { return sett_go_read_adapter; }
*/
import "C"

import (
	"fmt"
	"io"
	"runtime/cgo"
	"unsafe"
)

// stream is what a backup or restore callback works with: the caller's writer
// or reader, and what went wrong on the Go side.
type stream struct {
	w io.Writer
	r io.Reader
	// err is the writer's or reader's error that made the callback stop the call.
	err error
	// pending is an error a reader returned together with data; it is
	// reported at the next read.
	pending error
	// panicked holds a panic of the writer or reader, re-raised once the C call
	// has returned (a Go panic must not unwind through C frames).
	panicked bool
	panicVal any
}

// withStream runs f with a C context for s: C memory holding a cgo.Handle of s
// (so that no Go pointer is handed to C), freed when f returns. A panic of the
// writer or reader is re-raised here.
func withStream(s *stream, f func(ctx unsafe.Pointer) error) error {
	h := cgo.NewHandle(s)
	defer h.Delete()
	ctx := C.malloc(C.size_t(unsafe.Sizeof(C.uintptr_t(0))))
	defer C.free(ctx)
	*(*C.uintptr_t)(ctx) = C.uintptr_t(h)
	err := f(ctx)
	if s.panicked {
		panic(s.panicVal)
	}
	if err != nil && s.err != nil {
		// The sett error (errors.Is(err, ErrIO)) and the caller's error, both
		// reachable through errors.Is and errors.As.
		return fmt.Errorf("%w: %w", err, s.err)
	}
	return err
}

// streamOf is the stream behind a C context made by withStream.
func streamOf(ctx unsafe.Pointer) *stream {
	return cgo.Handle(*(*C.uintptr_t)(ctx)).Value().(*stream)
}

// backupTo streams a backup through the C ABI's callback form.
func (d *DB) backupTo(w io.Writer, since uint64) (uint64, error) {
	var next C.uint64_t
	err := withStream(&stream{w: w}, func(ctx unsafe.Pointer) error {
		return d.call(func(h *C.sett_db_t, cerr **C.sett_error_t) C.int {
			return C.sett_backup_to(h, C.uint64_t(since), C.goWriteFn(), ctx, &next, cerr)
		})
	})
	return uint64(next), err
}

// restoreFrom applies a backup read through the C ABI's callback form.
func (d *DB) restoreFrom(r io.Reader) (uint64, error) {
	var entries C.uint64_t
	err := withStream(&stream{r: r}, func(ctx unsafe.Pointer) error {
		return d.call(func(h *C.sett_db_t, cerr **C.sett_error_t) C.int {
			return C.sett_restore_from(h, C.goReadFn(), ctx, &entries, cerr)
		})
	})
	return uint64(entries), err
}
