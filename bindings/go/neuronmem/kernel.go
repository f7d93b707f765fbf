package neuronmem

/*
#include "helpers.h"
#include <stdlib.h>
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime/cgo"
	"unsafe"
)

// KernelTensor is one operand or result of a kernel call: a dense, row-major view of library memory, valid
// during the call only (copy what must outlive it). Operands are read only; a kernel writes every element of
// its results (grid points running at once write their own parts).
type KernelTensor struct {
	Data        []byte // nil for an empty tensor
	ElementType ElementType
	Dims        []int64
	MemoryKind  MemoryKind // where Data lies (a pinned_host operand is read in place)
}

// KernelCall is what a kernel is called with.
type KernelCall struct {
	Target        string // the custom-call target
	Name          string // the registered name (func_name for AwsNeuronCustomNativeKernel)
	BackendConfig string // as written in the graph (NKI: base64 of JSON); may be empty
	Inputs        []KernelTensor
	Outputs       []KernelTensor
	Grid          []int64 // the launch grid; empty for a plain call
	GridIndex     []int64 // this call's grid point
	Device        int32   // the executing device's id
}

// KernelFunc computes a custom call. A non-nil error fails the execution: an *Error keeps its code and message,
// any other error is CodeUnknown with its text; a panic is recovered and becomes CodeInternal.
type KernelFunc func(call *KernelCall) error

// KernelSlice views t's data as a []T (T must match its element type; F16 and BF16 as uint16).
func KernelSlice[T Element](t KernelTensor) ([]T, error) {
	want := ElementTypeOf[T]()
	if t.ElementType != want && !(want == U16 && (t.ElementType == F16 || t.ElementType == BF16)) {
		return nil, invalid("KernelSlice: the tensor is %d, not the element type %d of the slice",
			int(t.ElementType), int(want))
	}
	if len(t.Data) == 0 {
		return nil, nil
	}
	var z T
	return unsafe.Slice((*T)(unsafe.Pointer(&t.Data[0])), len(t.Data)/int(unsafe.Sizeof(z))), nil
}

// RegisterKernel registers k under name: a custom call whose target is name runs it once, an
// AwsNeuronCustomNativeKernel call whose backend_config names func_name = name once per grid point (grid
// points concurrently, on library threads). Executables compiled from now on use it (those compiled before
// keep theirs). k must not call the library. The client keeps k until it is destroyed.
func (c *Client) RegisterKernel(name string, k KernelFunc) error {
	if k == nil {
		return invalid("RegisterKernel: nil kernel")
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	h := cgo.NewHandle(k)
	err := c.use(func(ch *C.neuronmem_client_t) error {
		return check(C.nm_register_kernel(ch, cname, C.uintptr_t(h)))
	})
	if err != nil {
		h.Delete()
		return err
	}
	c.kmu.Lock()
	c.kernels = append(c.kernels, h)
	c.kmu.Unlock()
	return nil
}

func kernelTensors(p *C.neuronmem_kernel_tensor_t, n C.size_t) []KernelTensor {
	var out []KernelTensor
	for _, t := range cArray(p, n) {
		et := ElementType(t.element_type)
		dims := append([]int64(nil), cArray((*int64)(unsafe.Pointer(t.dims)), t.num_dims)...)
		size, err := byteSize(et, dims)
		kt := KernelTensor{ElementType: et, Dims: dims, MemoryKind: MemoryKind(t.memory_kind)}
		if err == nil && size > 0 && t.data != nil {
			kt.Data = unsafe.Slice((*byte)(t.data), int(size))
		}
		out = append(out, kt)
	}
	return out
}

func newStatus(code Code, msg string) *C.neuronmem_status_t {
	if code == CodeOK {
		code = CodeUnknown
	}
	cs := C.CString(msg)
	defer C.free(unsafe.Pointer(cs))
	return C.neuronmem_status_create(C.neuronmem_status_code_t(code), cs, C.size_t(len(msg)))
}

// The C library calls this for every kernel registered through RegisterKernel, with its cgo.Handle as
// user_data. Nothing unwinds into C: errors and panics become the returned status.
//
//export neuronmemGoKernel
func neuronmemGoKernel(call *C.neuronmem_kernel_call_t, userData unsafe.Pointer) (status *C.neuronmem_status_t) {
	defer func() {
		if r := recover(); r != nil {
			status = newStatus(CodeInternal, fmt.Sprintf("the Go kernel panicked: %v", r))
		}
	}()
	k := cgo.Handle(uintptr(userData)).Value().(KernelFunc)
	kc := &KernelCall{
		Target:        goString(call.target),
		Name:          goString(call.name),
		BackendConfig: goString(call.backend_config),
		Inputs:        kernelTensors(call.inputs, call.num_inputs),
		Outputs:       kernelTensors(call.outputs, call.num_outputs),
		Grid:          append([]int64(nil), cArray((*int64)(unsafe.Pointer(call.grid)), call.grid_rank)...),
		GridIndex:     append([]int64(nil), cArray((*int64)(unsafe.Pointer(call.grid_index)), call.grid_rank)...),
		Device:        int32(call.device),
	}
	err := k(kc)
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return newStatus(e.Code, e.Message)
	}
	return newStatus(CodeUnknown, err.Error())
}
