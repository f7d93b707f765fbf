package neuronmem

/*
#include <neuronmem/neuronmem.h>
*/
import "C"

import (
	"runtime/cgo"
	"unsafe"
)

// The C library calls these with a cgo.Handle as user_data: C never holds a Go pointer (cgo's rules), and
// the handle is deleted once the callback has run (exactly once, per the C contract).

//export neuronmemGoEventCallback
func neuronmemGoEventCallback(status *C.neuronmem_status_t, userData unsafe.Pointer) {
	h := cgo.Handle(uintptr(userData))
	fn := h.Value().(func(error))
	h.Delete()
	var err error
	if status != nil {
		err = errorOf(status)
	}
	fn(err)
}

//export neuronmemGoEntryVisitor
func neuronmemGoEntryVisitor(name C.neuronmem_string_t, userData unsafe.Pointer) {
	names := cgo.Handle(uintptr(userData)).Value().(*[]string)
	*names = append(*names, goString(name))
}

//export neuronmemGoBytesVisitor
func neuronmemGoBytesVisitor(data unsafe.Pointer, size C.size_t, userData unsafe.Pointer) {
	out := cgo.Handle(uintptr(userData)).Value().(*[]byte)
	*out = C.GoBytes(data, C.int(size))
}
