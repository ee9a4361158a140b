package sett

/*
#include <sett.h>
*/
import "C"

import (
	"runtime"
	"sync"
)

// Sequence hands out increasing integers persisted under a key, leasing
// bandwidth numbers at a time so that most calls to Next do not write (as
// Badger's Sequence). After a crash, numbers of the lease in use are skipped,
// never repeated. Safe for many goroutines.
type Sequence struct {
	mu sync.RWMutex
	s  *C.sett_sequence_t
}

// GetSequence opens the sequence stored under key, leasing bandwidth (at least
// 1) numbers at a time. Release it when done.
func (d *DB) GetSequence(key []byte, bandwidth uint64) (*Sequence, error) {
	var s *C.sett_sequence_t
	err := d.call(func(h *C.sett_db_t, cerr **C.sett_error_t) C.int {
		rc := C.sett_sequence_new(h, ptr(key), C.size_t(len(key)), C.uint64_t(bandwidth), &s, cerr)
		runtime.KeepAlive(key)
		return rc
	})
	if err != nil {
		return nil, err
	}
	return &Sequence{s: s}, nil
}

// Next returns the next number of the sequence.
func (s *Sequence) Next() (uint64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.s == nil {
		return 0, ErrClosed
	}
	var v C.uint64_t
	var cerr *C.sett_error_t
	if err := status(C.sett_sequence_next(s.s, &v, &cerr), cerr); err != nil {
		return 0, err
	}
	return uint64(v), nil
}

// Release gives back the unused part of the current lease, so that the next
// GetSequence on the key continues right after the last number handed out,
// and frees the sequence: later calls return ErrClosed. Release it before
// closing the database. Releasing twice is allowed.
func (s *Sequence) Release() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.s == nil {
		return nil
	}
	var cerr *C.sett_error_t
	err := status(C.sett_sequence_release(s.s, &cerr), cerr)
	C.sett_sequence_free(s.s)
	s.s = nil
	return err
}
