package neuronmem

/*
#include "helpers.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/cgo"
	"sync"
	"time"
)

// Event is a transfer's completion, or a caller-completed event (Client.NewEvent). It may be used from any
// goroutine and may outlive its client.
type Event struct {
	mu     sync.RWMutex
	h      *C.neuronmem_event_t
	client *Client
	// Host memory the transfer moves: held until the event is ready, then released on Close.
	hosts []*HostMemory
}

func newEvent(c *Client, h *C.neuronmem_event_t, hosts []*HostMemory) *Event {
	e := &Event{h: h, client: c, hosts: hosts}
	runtime.SetFinalizer(e, func(e *Event) { e.Close() })
	return e
}

func (e *Event) use(fn func(h *C.neuronmem_event_t) error) error {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.h == nil {
		return closedError("event")
	}
	return fn(e.h)
}

// IsReady reports whether the event is ready (succeeded or failed), without blocking.
func (e *Event) IsReady() (bool, error) {
	var out C.bool
	err := e.use(func(h *C.neuronmem_event_t) error { return check(C.neuronmem_event_is_ready(h, &out)) })
	return bool(out), err
}

// Wait blocks until the event is ready and returns the transfer's error. The context's deadline bounds the
// wait (DEADLINE_EXCEEDED when it passes); a context without a deadline that is cancelled stops the wait
// with CANCELLED, checked every 10 ms.
func (e *Event) Wait(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := ctx.Err(); err != nil {
		return ctxError(err)
	}
	if deadline, ok := ctx.Deadline(); ok {
		for {
			left := time.Until(deadline)
			if left <= 0 {
				return &Error{Code: CodeDeadlineExceeded, Message: "context deadline exceeded before the event was ready"}
			}
			step := left
			if ctx.Done() != nil && step > 10*time.Millisecond {
				step = 10 * time.Millisecond // still notice a cancel before the deadline
			}
			err := e.WaitTimeout(step)
			if CodeOf(err) != CodeDeadlineExceeded {
				return err
			}
			if cerr := ctx.Err(); cerr != nil && cerr != context.DeadlineExceeded {
				return ctxError(cerr)
			}
		}
	}
	if ctx.Done() == nil {
		return e.WaitTimeout(-1)
	}
	for {
		err := e.WaitTimeout(10 * time.Millisecond)
		if CodeOf(err) != CodeDeadlineExceeded {
			return err
		}
		if cerr := ctx.Err(); cerr != nil {
			return ctxError(cerr)
		}
	}
}

func ctxError(err error) error {
	if err == context.DeadlineExceeded {
		return &Error{Code: CodeDeadlineExceeded, Message: err.Error()}
	}
	return &Error{Code: CodeCancelled, Message: err.Error()}
}

// WaitTimeout blocks until the event is ready or d passed (d < 0: no limit). Returns the transfer's error or
// DEADLINE_EXCEEDED.
func (e *Event) WaitTimeout(d time.Duration) error {
	ns := int64(d)
	if d < 0 {
		ns = math.MaxInt64
	}
	return e.use(func(h *C.neuronmem_event_t) error { return check(C.neuronmem_event_wait(h, C.int64_t(ns))) })
}

// Err is the transfer's error once the event is ready (nil on success); FAILED_PRECONDITION before.
func (e *Event) Err() error {
	var transferErr error
	err := e.use(func(h *C.neuronmem_event_t) error {
		var s *C.neuronmem_status_t
		if err := check(C.neuronmem_event_error(h, &s)); err != nil {
			return err
		}
		transferErr = check(s)
		return nil
	})
	if err != nil {
		return err
	}
	return transferErr
}

// OnReady calls fn(err) exactly once when the event is ready: on the goroutine (thread) that completes it,
// or at once if it is ready already. fn must not block for long.
func (e *Event) OnReady(fn func(error)) error {
	h := cgo.NewHandle(fn)
	err := e.use(func(eh *C.neuronmem_event_t) error { return check(C.nm_event_on_ready(eh, C.uintptr_t(h))) })
	if err != nil {
		h.Delete()
	}
	return err
}

// Complete completes an event from Client.NewEvent: with err nil it succeeds; otherwise it fails with err,
// which must be (or wrap) an *Error: one returned by this package passes its own status object on, one made by
// the caller gets a new status with its code and message (INVALID_ARGUMENT for other errors).
// FAILED_PRECONDITION if the event is already complete.
func (e *Event) Complete(err error) error {
	var s *C.neuronmem_status_t
	if err != nil {
		var ne *Error
		if !errors.As(err, &ne) {
			return invalid("Complete: the error must be (or wrap) an *neuronmem.Error")
		}
		if ne.status != nil {
			s = ne.status.s
			defer runtime.KeepAlive(ne.status)
		} else {
			s = newStatus(ne.Code, ne.Message)
			defer C.neuronmem_status_free(s)
		}
	}
	return e.use(func(h *C.neuronmem_event_t) error { return check(C.neuronmem_event_complete(h, s)) })
}

// Close releases the handle; pending work still completes. An event of a transfer that moves host memory
// first waits for it, then releases that memory. Closing twice is a no-op.
func (e *Event) Close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.h == nil {
		return
	}
	if len(e.hosts) > 0 {
		C.neuronmem_status_free(C.neuronmem_event_wait(e.h, C.int64_t(math.MaxInt64)))
		for _, hm := range e.hosts {
			hm.release()
		}
		e.hosts = nil
	}
	C.neuronmem_event_destroy(e.h)
	e.h = nil
	runtime.SetFinalizer(e, nil)
}

// readLocks read-locks each distinct mutex once. A goroutine must not read-lock one sync.RWMutex twice: a
// Close (Lock) arriving between the two would wait for the first and block the second, a deadlock. The same
// buffer or event may appear several times in one call (an argument shared by every device, a wait repeated).
type readLocks map[*sync.RWMutex]struct{}

func (l readLocks) lock(m *sync.RWMutex) {
	if _, held := l[m]; !held {
		m.RLock()
		l[m] = struct{}{}
	}
}

func (l readLocks) unlock() {
	for m := range l {
		m.RUnlock()
		delete(l, m)
	}
}

// eventList is the C handles of events, each checked open and read-locked until unlock is called (so none
// is closed while the call that waits on it runs).
func eventList(events []*Event) (hs []*C.neuronmem_event_t, unlock func(), err error) {
	locks := readLocks{}
	hs, err = lockedEventList(events, locks)
	if err != nil {
		locks.unlock()
		return nil, func() {}, err
	}
	return hs, locks.unlock, nil
}

// lockedEventList is eventList with its read locks taken in locks (the caller unlocks them, also on error).
func lockedEventList(events []*Event, locks readLocks) ([]*C.neuronmem_event_t, error) {
	if len(events) == 0 {
		return nil, nil
	}
	hs := make([]*C.neuronmem_event_t, len(events))
	for i, e := range events {
		if e == nil {
			return nil, invalid("wait[%d] is nil", i)
		}
		locks.lock(&e.mu)
		if e.h == nil {
			return nil, &Error{Code: CodeFailedPrecondition, Message: fmt.Sprintf("wait[%d] is closed", i)}
		}
		hs[i] = e.h
	}
	return hs, nil
}

func firstOrNil(hs []*C.neuronmem_event_t) **C.neuronmem_event_t {
	if len(hs) == 0 {
		return nil
	}
	return &hs[0]
}
