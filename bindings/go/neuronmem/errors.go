// Package neuronmem is the Go binding of libneuronmem: clients, NeuronCore devices, memories, the pinned-host
// arena, buffers, events, placement manifests and the upload plan, over the library's C API (cgo, linked
// through pkg-config).
//
// Every handle has a Close method; a call on a closed handle returns an *Error with code
// CodeFailedPrecondition and never reaches the C library. Failures are *Error values carrying the C status
// code and message. C never keeps a Go pointer: asynchronous transfers and zero-copy uploads take host
// memory from the client's pinned-host arena (HostMemory), callbacks go through cgo.Handle.
package neuronmem

/*
#include "helpers.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"
)

// Code is a status code of the C API (neuronmem_status_code_t).
type Code int

// The status codes (append-only; the same numbers as absl and PJRT).
const (
	CodeOK                 Code = 0
	CodeCancelled          Code = 1
	CodeUnknown            Code = 2
	CodeInvalidArgument    Code = 3
	CodeDeadlineExceeded   Code = 4
	CodeNotFound           Code = 5
	CodeAlreadyExists      Code = 6
	CodePermissionDenied   Code = 7
	CodeResourceExhausted  Code = 8
	CodeFailedPrecondition Code = 9
	CodeAborted            Code = 10
	CodeOutOfRange         Code = 11
	CodeUnimplemented      Code = 12
	CodeInternal           Code = 13
	CodeUnavailable        Code = 14
	CodeDataLoss           Code = 15
)

// String is the code's canonical name, e.g. "INVALID_ARGUMENT".
func (c Code) String() string {
	return C.GoString(C.neuronmem_status_code_name(C.neuronmem_status_code_t(c)))
}

// Error is a failed call: the status code and the library's message.
type Error struct {
	Code    Code
	Message string
	status  *statusRef // the library's status object when it made the error (Event.Complete passes it on)
}

// statusRef owns a C status until it is garbage.
type statusRef struct{ s *C.neuronmem_status_t }

func (e *Error) Error() string { return e.Code.String() + ": " + e.Message }

// Is makes errors.Is(err, &neuronmem.Error{Code: c}) match any error of code c.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && (t.Message == "" || t.Message == e.Message)
}

// CodeOf is the code of err: CodeOK for nil, the *Error's code, CodeUnknown for other errors.
func CodeOf(err error) Code {
	if err == nil {
		return CodeOK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeUnknown
}

// errorOf copies a status (borrowed) into an *Error.
func errorOf(s *C.neuronmem_status_t) *Error {
	return &Error{Code: Code(C.neuronmem_status_code(s)), Message: goString(C.neuronmem_status_message(s))}
}

// check converts an owned status (nil = OK) into an *Error that owns it.
func check(s *C.neuronmem_status_t) error {
	if s == nil {
		return nil
	}
	e := errorOf(s)
	e.status = &statusRef{s}
	runtime.SetFinalizer(e.status, func(r *statusRef) { C.neuronmem_status_free(r.s) })
	return e
}

func closedError(what string) error {
	return &Error{Code: CodeFailedPrecondition, Message: what + " is closed"}
}

func invalid(format string, args ...any) error {
	return &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf(format, args...)}
}

func goString(s C.neuronmem_string_t) string {
	if s.size == 0 {
		return ""
	}
	return C.GoStringN(s.data, C.int(s.size))
}

// Version is the running library's version number, (major << 16) | (minor << 8) | patch.
func Version() uint32 { return uint32(C.neuronmem_version()) }

// VersionString is the running library's version, "MAJOR.MINOR.PATCH".
func VersionString() string { return C.GoString(C.neuronmem_version_string()) }

// cArray views a borrowed C array of n elements as a Go slice (valid as long as the C array).
func cArray[T any](p *T, n C.size_t) []T {
	if p == nil || n == 0 {
		return nil
	}
	return unsafe.Slice(p, int(n))
}
