package sett

/*
#include <stdlib.h>
#include <sett.h>
*/
import "C"

import (
	"context"
	"errors"
	"time"
	"unsafe"
)

// Change is one committed write delivered by DB.Subscribe.
type Change struct {
	Key []byte
	// Value is the value put (empty for a delete).
	Value []byte
	// Deleted is true for a delete (and a range delete).
	Deleted bool
	// DeleteRange is true for a range delete: every key in [Key, Value) was
	// deleted (an empty Value: no upper bound). A subscriber to prefixes gets
	// it when the range meets one of them, with the whole range.
	DeleteRange bool
	// Merged is true for a merge (DB.Merge): Value is the operand written,
	// not the key's new value.
	Merged bool
	// Version is the write's version; every op of one batch or transaction
	// shares it.
	Version uint64
	// UserMeta is the user-meta byte of a put.
	UserMeta byte
	// ExpiresAt is when the put expires, in unix seconds (0 = never).
	ExpiresAt uint64
}

// subscribeWait is how long one C wait lasts before ctx is checked again.
const subscribeWait = 50 * time.Millisecond

// Subscribe calls cb with the writes committed under the prefixes (none:
// every key), in version order, each once and after it became visible to
// reads (Badger's Subscribe). from = 0 starts from now; otherwise cb gets
// every change with a version above from, out of the in-memory history
// (Options.ChangeFeedHistoryBytes). It blocks until ctx is done (returning
// ctx.Err()), cb returns an error (returned), or the DB closes (ErrClosed,
// once every change committed before the close was delivered).
//
// A write never waits on a subscriber. One whose undelivered changes pass
// 8 MiB loses them and Subscribe returns a *FellBehindError: call Subscribe
// again with from = ResumeFrom. A from older than the history gives a
// *HistoryTooShortError; then rescan: subscribe from now, read everything in
// a View transaction and apply only the changes whose Version is above the
// transaction's ReadTs. A range delete (DeleteRange, DropPrefix) is one
// Change with DeleteRange set. A bulk load and DropAll are not changes: they
// end live subscriptions with a *FellBehindError that cannot be resumed
// (rescan).
func (d *DB) Subscribe(ctx context.Context, cb func([]Change) error, from uint64, prefixes ...[]byte) error {
	return storeSubscribe(d, ctx, cb, from, prefixes)
}

// deliver hands the changes of sub to cb until ctx is done, cb fails or the
// subscription ends, then closes sub.
func deliver(ctx context.Context, sub *C.sett_subscription_t, cb func([]Change) error) error {
	defer C.sett_subscription_close(sub)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		changes, err := next(sub, subscribeWait)
		if err != nil {
			return err
		}
		if len(changes) > 0 {
			if err := cb(changes); err != nil {
				return err
			}
		}
	}
}

// openSubscription copies the prefixes to C memory and opens a subscription
// through call (sett_subscribe or sett_keyspace_subscribe).
func openSubscription(from uint64, prefixes [][]byte,
	call func(list *C.sett_bytes_t, n C.size_t, from C.uint64_t, hasFrom C.uint32_t, sub **C.sett_subscription_t, cerr **C.sett_error_t) C.int,
) (*C.sett_subscription_t, error) {
	n := len(prefixes)
	var list *C.sett_bytes_t
	if n > 0 {
		list = (*C.sett_bytes_t)(C.malloc(C.size_t(n) * C.size_t(unsafe.Sizeof(C.sett_bytes_t{}))))
		defer C.free(unsafe.Pointer(list))
		items := unsafe.Slice(list, n)
		for i, p := range prefixes {
			items[i].len = C.size_t(len(p))
			items[i].data = nil
			if len(p) > 0 {
				items[i].data = (*C.uint8_t)(C.CBytes(p))
				defer C.free(unsafe.Pointer(items[i].data))
			}
		}
	}
	hasFrom := C.uint32_t(0)
	if from > 0 {
		hasFrom = 1
	}
	var sub *C.sett_subscription_t
	var cerr *C.sett_error_t
	rc := call(list, C.size_t(n), C.uint64_t(from), hasFrom, &sub, &cerr)
	if err := status(rc, cerr); err != nil {
		return nil, err
	}
	return sub, nil
}

// next waits up to wait for changes and copies them to Go.
func next(sub *C.sett_subscription_t, wait time.Duration) ([]Change, error) {
	var cs C.sett_changes_t
	var cerr *C.sett_error_t
	rc := C.sett_subscription_next(sub, C.int64_t(wait/time.Millisecond), &cs, &cerr)
	if err := status(rc, cerr); err != nil {
		return nil, err
	}
	defer C.sett_changes_free(&cs)
	if cs.len == 0 {
		return nil, nil
	}
	items := unsafe.Slice(cs.items, int(cs.len))
	out := make([]Change, len(items))
	for i := range items {
		it := &items[i]
		out[i] = Change{
			Key:         C.GoBytes(unsafe.Pointer(it.key), C.int(it.key_len)),
			Value:       C.GoBytes(unsafe.Pointer(it.value), C.int(it.value_len)),
			Deleted:     it.kind == C.SETT_CHANGE_DELETE || it.kind == C.SETT_CHANGE_DELETE_RANGE,
			DeleteRange: it.kind == C.SETT_CHANGE_DELETE_RANGE,
			Merged:      it.kind == C.SETT_CHANGE_MERGE,
			Version:     uint64(it.version),
			UserMeta:    byte(it.user_meta),
			ExpiresAt:   uint64(it.expires_at),
		}
	}
	return out, nil
}

// LastVersion is the newest version visible to reads: what a read or
// transaction begun now sees.
func (d *DB) LastVersion() (uint64, error) {
	h, err := d.handle()
	if err != nil {
		return 0, err
	}
	defer d.mu.RUnlock()
	return uint64(C.sett_last_version(h)), nil
}

// IsFellBehind reports whether err says a subscriber fell behind, and the
// version to resume from.
func IsFellBehind(err error) (resumeFrom uint64, ok bool) {
	var fb *FellBehindError
	if errors.As(err, &fb) {
		return fb.ResumeFrom, true
	}
	return 0, false
}
