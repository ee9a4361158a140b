package sett

/*
#include <sett.h>
*/
import "C"

import (
	"errors"
	"fmt"
)

// Error is an error returned by sett: its C status code and message. Compare
// it with the sentinels below through errors.Is (the match is by code), or get
// at the message with errors.As.
type Error struct {
	Code    int
	Message string
}

func (e *Error) Error() string { return "sett: " + e.Message }

// Is lets errors.Is match an *Error against the sentinels by code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// String describes the error with its code, for fmt's %v of a value.
func (e *Error) String() string { return fmt.Sprintf("sett error %d: %s", e.Code, e.Message) }

// One sentinel per status code of sett.h; compare with errors.Is.
var (
	// ErrNotFound: the key has no value (SETT_NOT_FOUND).
	ErrNotFound = sentinel(C.SETT_NOT_FOUND)
	// ErrConflict: a transaction conflicted with one that committed after it
	// began; DB.Update retries it, a Txn committed by hand must be retried by
	// the caller (SETT_CONFLICT).
	ErrConflict = sentinel(C.SETT_CONFLICT)
	// ErrInvalidArgument: an empty key, a write in a read-only transaction or
	// another bad argument (SETT_INVALID_ARGUMENT).
	ErrInvalidArgument = sentinel(C.SETT_INVALID_ARGUMENT)
	// ErrIO: an operating-system I/O error (SETT_IO).
	ErrIO = sentinel(C.SETT_IO)
	// ErrCorruption: damaged data; the message names the file and offset
	// (SETT_CORRUPTION).
	ErrCorruption = sentinel(C.SETT_CORRUPTION)
	// ErrClosed: the database, transaction, iterator, batch, sequence or bulk
	// loader is closed or finished (SETT_CLOSED).
	ErrClosed = sentinel(C.SETT_CLOSED)
	// ErrTooBig: a key, value, batch or transaction exceeds its limit
	// (SETT_TOO_BIG).
	ErrTooBig = sentinel(C.SETT_TOO_BIG)
	// ErrBufferTooSmall: a caller buffer was too small (SETT_BUFFER_TOO_SMALL).
	// The package grows its buffers itself, so a caller does not see it.
	ErrBufferTooSmall = sentinel(C.SETT_BUFFER_TOO_SMALL)
	// ErrPanic: a panic inside sett was caught; the database may be unusable
	// (SETT_PANIC).
	ErrPanic = sentinel(C.SETT_PANIC)
	// ErrLocked: another process holds the database directory (SETT_LOCKED).
	ErrLocked = sentinel(C.SETT_LOCKED)
	// ErrReadOnly: a write to a database opened with ReadOnly (SETT_READ_ONLY).
	ErrReadOnly = sentinel(C.SETT_READ_ONLY)
	// ErrPoisoned: an earlier write error left the database refusing writes;
	// reopen it (SETT_POISONED).
	ErrPoisoned = sentinel(C.SETT_POISONED)
	// ErrUnsupportedVersion: a file has a format version this libsett cannot
	// read (SETT_UNSUPPORTED_VERSION).
	ErrUnsupportedVersion = sentinel(C.SETT_UNSUPPORTED_VERSION)
	// ErrInvalidOption: an option is out of range; the message names it
	// (SETT_INVALID_OPTION).
	ErrInvalidOption = sentinel(C.SETT_INVALID_OPTION)
	// ErrFellBehind: a change-feed subscriber's queue passed its bound and
	// its undelivered changes were dropped; the error is a *FellBehindError
	// carrying the version to resubscribe from (SETT_FELL_BEHIND).
	ErrFellBehind = sentinel(C.SETT_FELL_BEHIND)
	// ErrFeedHistoryTooShort: a subscription asked for a version older than
	// the change feed's history holds; the error is a *HistoryTooShortError
	// naming the oldest version it can start from (SETT_FEED_HISTORY_TOO_SHORT).
	ErrFeedHistoryTooShort = sentinel(C.SETT_FEED_HISTORY_TOO_SHORT)
	// ErrMergeOperatorMissing: a key holds merge operands, or a merge was
	// asked, but the database has no merge operator: open it with the one it
	// records (SETT_MERGE_OPERATOR_MISSING).
	ErrMergeOperatorMissing = sentinel(C.SETT_MERGE_OPERATOR_MISSING)
	// ErrMergeOperatorMismatch: Open was given another merge operator than
	// the one the database records; the message names it
	// (SETT_MERGE_OPERATOR_MISMATCH).
	ErrMergeOperatorMismatch = sentinel(C.SETT_MERGE_OPERATOR_MISMATCH)
	// ErrMergeFailed: the merge operator refused a key's operands; they stay
	// stored as they were (SETT_MERGE_FAILED).
	ErrMergeFailed = sentinel(C.SETT_MERGE_FAILED)
	// ErrOther: an engine error that this version's sett.h has no code for;
	// the message says what failed (SETT_OTHER).
	ErrOther = sentinel(C.SETT_OTHER)
	// ErrWrongEncryptionKey: Options.EncryptionKey is not the key the
	// database was encrypted with; nothing was read or changed
	// (SETT_WRONG_ENCRYPTION_KEY).
	ErrWrongEncryptionKey = sentinel(C.SETT_WRONG_ENCRYPTION_KEY)
	// ErrEncryptionKeyRequired: the database is encrypted and
	// Options.EncryptionKey is empty (SETT_ENCRYPTION_KEY_REQUIRED).
	ErrEncryptionKeyRequired = sentinel(C.SETT_ENCRYPTION_KEY_REQUIRED)
	// ErrNotEncrypted: Options.EncryptionKey was given for a database that is
	// not encrypted (SETT_NOT_ENCRYPTED).
	ErrNotEncrypted = sentinel(C.SETT_NOT_ENCRYPTED)
)

// ErrNoRewrite is returned by RunValueLogGC when no value-log file had enough
// garbage to be collected (as Badger's). It is not a C status: the C call
// succeeds and reports that nothing was collected.
var ErrNoRewrite = errors.New("sett: value log GC found nothing to rewrite")

// sentinels lists the sentinel of every status code, for status() and tests.
var sentinels = []*Error{
	ErrNotFound, ErrConflict, ErrInvalidArgument, ErrIO, ErrCorruption, ErrClosed,
	ErrTooBig, ErrBufferTooSmall, ErrPanic, ErrLocked, ErrReadOnly, ErrPoisoned,
	ErrUnsupportedVersion, ErrInvalidOption, ErrFellBehind, ErrFeedHistoryTooShort,
	ErrOther, ErrMergeOperatorMissing, ErrMergeOperatorMismatch, ErrMergeFailed,
	ErrWrongEncryptionKey, ErrEncryptionKeyRequired, ErrNotEncrypted,
}

// lastStatusCode is the largest status code of the sett.h compiled in.
const lastStatusCode = int(C.SETT_NOT_ENCRYPTED)

func sentinel(code C.int) *Error {
	return &Error{Code: int(code), Message: statusString(int(code))}
}

// statusString is libsett's static description of a status code.
func statusString(code int) string { return C.GoString(C.sett_status_string(C.int(code))) }

// status turns a C status and error into a Go error (nil for SETT_OK) and
// frees the C error.
func status(rc C.int, cerr *C.sett_error_t) error {
	if rc == C.SETT_OK {
		C.sett_error_free(cerr)
		return nil
	}
	if rc == C.SETT_NOT_FOUND {
		C.sett_error_free(cerr)
		return ErrNotFound
	}
	msg := statusString(int(rc))
	var version uint64
	if cerr != nil {
		msg = C.GoString(C.sett_error_message(cerr))
		version = uint64(C.sett_error_version(cerr))
		C.sett_error_free(cerr)
	}
	e := &Error{Code: int(rc), Message: msg}
	switch rc {
	case C.SETT_FELL_BEHIND:
		return &FellBehindError{ResumeFrom: version, Err: e}
	case C.SETT_FEED_HISTORY_TOO_SHORT:
		return &HistoryTooShortError{Oldest: version, Err: e}
	}
	return e
}

// FellBehindError is returned by DB.Subscribe when the subscriber fell
// behind: subscribe again with from = ResumeFrom to get every change after
// the ones it was given. errors.Is(err, ErrFellBehind) matches it.
type FellBehindError struct {
	// ResumeFrom: every change up to this version was delivered (or was not
	// under the subscriber's prefixes).
	ResumeFrom uint64
	Err        *Error
}

func (e *FellBehindError) Error() string { return e.Err.Error() }

// Unwrap gives the *Error, for errors.Is and errors.As.
func (e *FellBehindError) Unwrap() error { return e.Err }

// HistoryTooShortError is returned by DB.Subscribe when from is older than
// the change feed's history holds: rescan (see DB.Subscribe) instead.
// errors.Is(err, ErrFeedHistoryTooShort) matches it.
type HistoryTooShortError struct {
	// Oldest is the oldest version a subscription can start from now.
	Oldest uint64
	Err    *Error
}

func (e *HistoryTooShortError) Error() string { return e.Err.Error() }

// Unwrap gives the *Error, for errors.Is and errors.As.
func (e *HistoryTooShortError) Unwrap() error { return e.Err }

// argError is an error made on the Go side before calling C.
func argError(code C.int, format string, args ...any) error {
	return &Error{Code: int(code), Message: fmt.Sprintf(format, args...)}
}
