package neuronmem

/*
#include "helpers.h"
#include <stdlib.h>
*/
import "C"

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"unsafe"
)

// ElementType is a buffer's element type (neuronmem_element_type_t).
type ElementType int

// The element types.
const (
	Pred ElementType = 0
	S8   ElementType = 1
	S16  ElementType = 2
	S32  ElementType = 3
	S64  ElementType = 4
	U8   ElementType = 5
	U16  ElementType = 6
	U32  ElementType = 7
	U64  ElementType = 8
	F16  ElementType = 9
	BF16 ElementType = 10
	F32  ElementType = 11
	F64  ElementType = 12
	// complex<f32> and complex<f64>: Go's complex64 and complex128.
	C64  ElementType = 13
	C128 ElementType = 14
	// The 8- and 6-bit floats, one byte each: uint8 bit patterns.
	F8E5M2        ElementType = 15
	F8E4M3FN      ElementType = 16
	F8E4M3B11FNUZ ElementType = 17
	F8E5M2FNUZ    ElementType = 18
	F8E4M3FNUZ    ElementType = 19
	F8E4M3        ElementType = 20
	F8E3M4        ElementType = 21
	F8E8M0FNU     ElementType = 22
	F6E2M3FN      ElementType = 23
	F6E3M2FN      ElementType = 24
	// The sub-byte integers, one byte per element: int8 (S4, S2) or uint8 (U4, U2) values.
	S4 ElementType = 25
	U4 ElementType = 26
	S2 ElementType = 27
	U2 ElementType = 28
	// The 4-bit float (MX), one byte per element: uint8 bit patterns.
	F4E2M1FN ElementType = 29
)

// smallFloat: one of the 8-, 6- or 4-bit float types, which Go holds as uint8 bit patterns.
func (t ElementType) smallFloat() bool { return (t >= F8E5M2 && t <= F6E3M2FN) || t == F4E2M1FN }

// byteStorage: the Go element type holding t's one-byte elements (int8 for S4 and S2, uint8 for U4, U2 and the
// small floats), or t.
func (t ElementType) byteStorage() ElementType {
	switch {
	case t == S4 || t == S2:
		return S8
	case t == U4 || t == U2 || t.smallFloat():
		return U8
	}
	return t
}

// Size is the size in bytes of one element (0 for an unknown type).
func (t ElementType) Size() uint64 {
	return uint64(C.neuronmem_element_type_size(C.neuronmem_element_type_t(t)))
}

// Semantics is how the library may use the caller's host memory in an upload (PJRT's host-buffer semantics).
type Semantics int

// The host-buffer semantics.
const (
	ImmutableOnlyDuringCall         Semantics = 0
	ImmutableUntilTransferCompletes Semantics = 1
	ImmutableZeroCopy               Semantics = 2
	MutableZeroCopy                 Semantics = 3
)

// Element is a Go type with a buffer element type (F16 and BF16 travel as uint16 bit patterns, the 8- and 6-bit
// floats as uint8 ones).
type Element interface {
	bool | int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64 | float32 | float64 | complex64 | complex128
}

// ElementTypeOf is the element type of T (uint16 maps to U16).
func ElementTypeOf[T Element]() ElementType {
	var z T
	switch any(z).(type) {
	case bool:
		return Pred
	case int8:
		return S8
	case int16:
		return S16
	case int32:
		return S32
	case int64:
		return S64
	case uint8:
		return U8
	case uint16:
		return U16
	case uint32:
		return U32
	case uint64:
		return U64
	case float32:
		return F32
	case float64:
		return F64
	case complex64:
		return C64
	case complex128:
		return C128
	}
	return -1
}

// sliceBytes views a slice's elements as bytes.
func sliceBytes[T Element](data []T) []byte {
	if len(data) == 0 {
		return nil
	}
	var z T
	return unsafe.Slice((*byte)(unsafe.Pointer(&data[0])), len(data)*int(unsafe.Sizeof(z)))
}

// Buffer is a dense array in one memory. Close it before its client. Methods are safe for concurrent use.
type Buffer struct {
	mu     sync.RWMutex
	client *Client
	h      *C.neuronmem_buffer_t
	// Host memory the buffer aliases or still reads, and the event after which the library is done with it.
	host     *HostMemory
	owned    unsafe.Pointer // C memory of the binding's own the buffer may alias, freed after hostDone
	hostDone *C.neuronmem_event_t
}

func newBuffer(c *Client, h *C.neuronmem_buffer_t, host *HostMemory, hostDone *C.neuronmem_event_t) *Buffer {
	b := &Buffer{client: c, h: h, host: host, hostDone: hostDone}
	runtime.SetFinalizer(b, func(b *Buffer) { b.Close() })
	return b
}

func (b *Buffer) use(fn func(h *C.neuronmem_buffer_t) error) error {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.h == nil {
		return closedError("buffer")
	}
	return fn(b.h)
}

func dimsOf(dims []int64) (*C.int64_t, C.size_t) {
	if len(dims) == 0 {
		return nil, 0
	}
	return (*C.int64_t)(unsafe.Pointer(&dims[0])), C.size_t(len(dims))
}

// byteSize is the dense size of a shape, checked (negative dimension, overflow).
func byteSize(et ElementType, dims []int64) (uint64, error) {
	n := et.Size()
	if n == 0 {
		return 0, invalid("unknown element type %d", int(et))
	}
	for i, d := range dims {
		if d < 0 {
			return 0, invalid("dims[%d] = %d is negative", i, d)
		}
		if d != 0 && n > math.MaxUint64/uint64(d) {
			return 0, invalid("the shape %v overflows", dims)
		}
		n *= uint64(d)
	}
	return n, nil
}

func bytesPtr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}

// FromBytes uploads dense host bytes of the given type and shape into m (any kind, any core). The library
// copies them during the call (ImmutableOnlyDuringCall): data may be reused at once.
func (m *Memory) FromBytes(et ElementType, dims []int64, data []byte, wait ...*Event) (*Buffer, error) {
	n, err := byteSize(et, dims)
	if err != nil {
		return nil, err
	}
	if uint64(len(data)) != n {
		return nil, invalid("%d bytes of data for a %v %v buffer of %d bytes", len(data), et, dims, n)
	}
	return m.fromHost(bytesPtr(data), et, dims, ImmutableOnlyDuringCall, nil, wait)
}

// FromSlice uploads a Go slice of len prod(dims) into m, copied during the call.
func FromSlice[T Element](m *Memory, dims []int64, data []T, wait ...*Event) (*Buffer, error) {
	et := ElementTypeOf[T]()
	if et < 0 {
		return nil, invalid("no element type for %T", data)
	}
	return m.FromBytes(et, dims, sliceBytes(data), wait...)
}

// FromHost uploads bytes [offset, offset+size) of pinned-host memory with any semantics: a pinned_host
// target with a zero-copy semantics aliases them (Buffer.IsZeroCopy). The buffer holds hm until it is
// closed and the library is done with the memory.
func (m *Memory) FromHost(hm *HostMemory, offset uint64, et ElementType, dims []int64, sem Semantics,
	wait ...*Event) (*Buffer, error) {
	n, err := byteSize(et, dims)
	if err != nil {
		return nil, err
	}
	p, err := hm.acquire(offset, n)
	if err != nil {
		return nil, err
	}
	b, err := m.fromHost(p, et, dims, sem, hm, wait)
	if err != nil {
		hm.release()
	}
	return b, err
}

func (m *Memory) fromHost(p unsafe.Pointer, et ElementType, dims []int64, sem Semantics, hm *HostMemory,
	wait []*Event) (*Buffer, error) {
	hs, unlock, err := eventList(wait)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var out *C.neuronmem_buffer_t
	var done *C.neuronmem_event_t
	var doneOut **C.neuronmem_event_t
	if hm != nil {
		doneOut = &done
	}
	d, nd := dimsOf(dims)
	err = m.client.use(func(ch *C.neuronmem_client_t) error {
		return check(C.nm_from_host(ch, p, C.int(et), C.int(sem), d, nd, nil, m.h, firstOrNil(hs),
			C.size_t(len(hs)), &out, doneOut))
	})
	runtime.KeepAlive(dims)
	if err != nil {
		return nil, err
	}
	return newBuffer(m.client, out, hm, done), nil
}

// BatchEntry is one upload of Client.UploadBatch: dense bytes of a type and shape into a memory.
type BatchEntry struct {
	Memory      *Memory
	ElementType ElementType
	Dims        []int64
	Data        []byte
}

// UploadBatch uploads every entry in one batched submission with one event for all; the data is copied
// during the call. On failure no buffer is created.
func (c *Client) UploadBatch(entries []BatchEntry) ([]*Buffer, *Event, error) {
	if len(entries) == 0 {
		return nil, nil, invalid("UploadBatch: no entries")
	}
	args := C.nm_batch_new(C.size_t(len(entries)))
	defer C.free(unsafe.Pointer(args))
	var cmem []unsafe.Pointer // the batch's data and dims, copied to C memory: C memory holds no Go pointer
	defer func() {
		for _, p := range cmem {
			C.free(p)
		}
	}()
	for i, e := range entries {
		n, err := byteSize(e.ElementType, e.Dims)
		if err != nil {
			return nil, nil, fmt.Errorf("entry %d: %w", i, err)
		}
		if uint64(len(e.Data)) != n {
			return nil, nil, invalid("entry %d: %d bytes of data for %d", i, len(e.Data), n)
		}
		if e.Memory == nil || e.Memory.client != c {
			return nil, nil, invalid("entry %d: the memory is not one of this client's", i)
		}
		data := C.CBytes(e.Data)
		cmem = append(cmem, data)
		var dims unsafe.Pointer
		if len(e.Dims) > 0 {
			dims = C.CBytes(unsafe.Slice((*byte)(unsafe.Pointer(&e.Dims[0])), 8*len(e.Dims)))
			cmem = append(cmem, dims)
		}
		C.nm_batch_set(args, C.size_t(i), data, C.int(e.ElementType), C.int(ImmutableOnlyDuringCall),
			(*C.int64_t)(dims), C.size_t(len(e.Dims)), e.Memory.h)
	}
	outs := make([]*C.neuronmem_buffer_t, len(entries))
	var ready *C.neuronmem_event_t
	err := c.use(func(h *C.neuronmem_client_t) error {
		return check(C.neuronmem_buffer_from_host_batch(h, args, C.size_t(len(entries)), &outs[0], &ready))
	})
	if err != nil {
		return nil, nil, err
	}
	bufs := make([]*Buffer, len(outs))
	for i, o := range outs {
		bufs[i] = newBuffer(c, o, nil, nil)
	}
	return bufs, newEvent(c, ready, nil), nil
}

// Allocate creates an uninitialised buffer of the type and shape in m (a negative dimension is
// INVALID_ARGUMENT from the library).
func (m *Memory) Allocate(et ElementType, dims []int64) (*Buffer, error) {
	var out *C.neuronmem_buffer_t
	d, nd := dimsOf(dims)
	err := m.client.use(func(ch *C.neuronmem_client_t) error {
		return check(C.nm_allocate(ch, m.h, C.int(et), d, nd, &out))
	})
	runtime.KeepAlive(dims)
	if err != nil {
		return nil, err
	}
	return newBuffer(m.client, out, nil, nil), nil
}

// CopyTo copies the buffer into a new buffer in m (any kind, any core of the same client) after wait.
func (b *Buffer) CopyTo(m *Memory, wait ...*Event) (*Buffer, error) {
	hs, unlock, err := eventList(wait)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var out *C.neuronmem_buffer_t
	err = b.use(func(h *C.neuronmem_buffer_t) error {
		return check(C.nm_copy(h, m.h, firstOrNil(hs), C.size_t(len(hs)), &out))
	})
	if err != nil {
		return nil, err
	}
	return newBuffer(b.client, out, nil, nil), nil
}

// Read copies len(dst) bytes from offset into dst, after wait; it returns when they are there.
func (b *Buffer) Read(dst []byte, offset uint64, wait ...*Event) error {
	hs, unlock, err := eventList(wait)
	if err != nil {
		return err
	}
	defer unlock()
	return b.use(func(h *C.neuronmem_buffer_t) error {
		return check(C.nm_read(h, C.uint64_t(offset), C.uint64_t(len(dst)), bytesPtr(dst), firstOrNil(hs),
			C.size_t(len(hs)), nil))
	})
}

// ReadAll reads the whole buffer into dst; a dst shorter than the buffer is INVALID_ARGUMENT.
func (b *Buffer) ReadAll(dst []byte) error {
	n, err := b.Size()
	if err != nil {
		return err
	}
	if uint64(len(dst)) < n {
		return invalid("the output slice of %d bytes is smaller than the buffer's %d bytes", len(dst), n)
	}
	return b.Read(dst[:n], 0)
}

// ReadInto reads the whole buffer into dst, whose element type must match and which must hold it all.
func ReadInto[T Element](b *Buffer, dst []T) error {
	et, err := b.ElementType()
	if err != nil {
		return err
	}
	if want := ElementTypeOf[T](); want != et && !(want == U16 && (et == BF16 || et == F16)) &&
		want != et.byteStorage() {
		return invalid("a %T output for a %v buffer", dst, et)
	}
	return b.ReadAll(sliceBytes(dst))
}

// ToSlice reads the whole buffer into a new slice.
func ToSlice[T Element](b *Buffer) ([]T, error) {
	n, err := b.Size()
	if err != nil {
		return nil, err
	}
	var z T
	out := make([]T, n/uint64(unsafe.Sizeof(z)))
	return out, ReadInto(b, out)
}

// ReadAsync copies bytes [offset, offset+size) into pinned-host memory at dstOffset after wait, without
// blocking; hm is held until the returned event is closed.
func (b *Buffer) ReadAsync(hm *HostMemory, dstOffset, offset, size uint64, wait ...*Event) (*Event, error) {
	return b.asyncHost(hm, dstOffset, size, wait, func(h *C.neuronmem_buffer_t, p unsafe.Pointer,
		ws **C.neuronmem_event_t, nw C.size_t, out **C.neuronmem_event_t) *C.neuronmem_status_t {
		return C.nm_read(h, C.uint64_t(offset), C.uint64_t(size), p, ws, nw, out)
	})
}

// Write writes src into the buffer at offset, in place, after wait; it returns when the bytes are there.
func (b *Buffer) Write(src []byte, offset uint64, wait ...*Event) error {
	hs, unlock, err := eventList(wait)
	if err != nil {
		return err
	}
	defer unlock()
	return b.use(func(h *C.neuronmem_buffer_t) error {
		return check(C.nm_write(h, C.uint64_t(offset), C.uint64_t(len(src)), bytesPtr(src), firstOrNil(hs),
			C.size_t(len(hs)), nil))
	})
}

// WriteAsync writes size bytes of pinned-host memory (from srcOffset) into the buffer at offset, without
// blocking; hm is held until the returned event is closed.
func (b *Buffer) WriteAsync(hm *HostMemory, srcOffset, size, offset uint64, wait ...*Event) (*Event, error) {
	return b.asyncHost(hm, srcOffset, size, wait, func(h *C.neuronmem_buffer_t, p unsafe.Pointer,
		ws **C.neuronmem_event_t, nw C.size_t, out **C.neuronmem_event_t) *C.neuronmem_status_t {
		return C.nm_write(h, C.uint64_t(offset), C.uint64_t(size), p, ws, nw, out)
	})
}

// UploadChunk copies data into an allocated buffer at offset; isLast marks the content defined once every
// chunk landed. Returns when the chunk is there.
func (b *Buffer) UploadChunk(data []byte, offset uint64, isLast bool, wait ...*Event) error {
	hs, unlock, err := eventList(wait)
	if err != nil {
		return err
	}
	defer unlock()
	return b.use(func(h *C.neuronmem_buffer_t) error {
		return check(C.nm_chunk(h, C.uint64_t(offset), C.uint64_t(len(data)), bytesPtr(data), firstOrNil(hs),
			C.size_t(len(hs)), boolInt(isLast), nil))
	})
}

// UploadChunkAsync is UploadChunk from pinned-host memory, without blocking; hm is held until the returned
// event is closed.
func (b *Buffer) UploadChunkAsync(hm *HostMemory, srcOffset, size, offset uint64, isLast bool,
	wait ...*Event) (*Event, error) {
	return b.asyncHost(hm, srcOffset, size, wait, func(h *C.neuronmem_buffer_t, p unsafe.Pointer,
		ws **C.neuronmem_event_t, nw C.size_t, out **C.neuronmem_event_t) *C.neuronmem_status_t {
		return C.nm_chunk(h, C.uint64_t(offset), C.uint64_t(size), p, ws, nw, boolInt(isLast), out)
	})
}

func boolInt(v bool) C.int {
	if v {
		return 1
	}
	return 0
}

func (b *Buffer) asyncHost(hm *HostMemory, hostOffset, size uint64, wait []*Event,
	call func(*C.neuronmem_buffer_t, unsafe.Pointer, **C.neuronmem_event_t, C.size_t,
		**C.neuronmem_event_t) *C.neuronmem_status_t) (*Event, error) {
	hs, unlock, err := eventList(wait)
	if err != nil {
		return nil, err
	}
	defer unlock()
	p, err := hm.acquire(hostOffset, size)
	if err != nil {
		return nil, err
	}
	var ev *C.neuronmem_event_t
	err = b.use(func(h *C.neuronmem_buffer_t) error {
		return check(call(h, p, firstOrNil(hs), C.size_t(len(hs)), &ev))
	})
	if err != nil {
		hm.release()
		return nil, err
	}
	return newEvent(b.client, ev, []*HostMemory{hm}), nil
}

// LoadFile loads bytes [fileOffset, fileOffset+size) of a regular file into the buffer at bufferOffset, after
// wait; it returns when they are there.
func (b *Buffer) LoadFile(path string, fileOffset, size, bufferOffset uint64, wait ...*Event) error {
	_, err := b.loadFile(path, fileOffset, size, bufferOffset, wait, false)
	return err
}

// LoadFileAsync is LoadFile without blocking (io_uring): the returned event says when the bytes landed.
func (b *Buffer) LoadFileAsync(path string, fileOffset, size, bufferOffset uint64, wait ...*Event) (*Event, error) {
	return b.loadFile(path, fileOffset, size, bufferOffset, wait, true)
}

func (b *Buffer) loadFile(path string, fileOffset, size, bufferOffset uint64, wait []*Event,
	async bool) (*Event, error) {
	hs, unlock, err := eventList(wait)
	if err != nil {
		return nil, err
	}
	defer unlock()
	cpath := cString(path) // the library opens the file during the call
	defer freeC(unsafe.Pointer(cpath))
	var ev *C.neuronmem_event_t
	var out **C.neuronmem_event_t
	if async {
		out = &ev
	}
	err = b.use(func(h *C.neuronmem_buffer_t) error {
		return check(C.nm_load_file(h, cpath, C.uint64_t(fileOffset), C.uint64_t(size), C.uint64_t(bufferOffset),
			firstOrNil(hs), C.size_t(len(hs)), out))
	})
	if err != nil || !async {
		return nil, err
	}
	return newEvent(b.client, ev, nil), nil
}

// ReadyEvent is an event ready when the buffer's content is defined (upload, copy, last chunk).
func (b *Buffer) ReadyEvent() (*Event, error) {
	var ev *C.neuronmem_event_t
	err := b.use(func(h *C.neuronmem_buffer_t) error { return check(C.neuronmem_buffer_ready_event(h, &ev)) })
	if err != nil {
		return nil, err
	}
	return newEvent(b.client, ev, nil), nil
}

// Delete releases the content once pending transfers end; later transfers fail with FAILED_PRECONDITION.
func (b *Buffer) Delete() error {
	return b.use(func(h *C.neuronmem_buffer_t) error { return check(C.neuronmem_buffer_delete(h)) })
}

// Close destroys the buffer (deleting its content) and, once the library is done with it, releases host
// memory it aliased. Closing twice is a no-op.
func (b *Buffer) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.h == nil {
		return
	}
	C.neuronmem_buffer_destroy(b.h)
	b.h = nil
	if b.hostDone != nil {
		C.neuronmem_status_free(C.neuronmem_event_wait(b.hostDone, C.int64_t(math.MaxInt64)))
		C.neuronmem_event_destroy(b.hostDone)
		b.hostDone = nil
	}
	if b.host != nil {
		b.host.release()
		b.host = nil
	}
	if b.owned != nil {
		C.free(b.owned)
		b.owned = nil
	}
	runtime.SetFinalizer(b, nil)
}

// Memory is the memory the buffer lives in.
func (b *Buffer) Memory() (*Memory, error) {
	var m *C.neuronmem_memory_t
	if err := b.use(func(h *C.neuronmem_buffer_t) error { return check(C.neuronmem_buffer_memory(h, &m)) }); err != nil {
		return nil, err
	}
	return &Memory{b.client, m}, nil
}

// Device is the device whose queue moves the buffer's bytes.
func (b *Buffer) Device() (*Device, error) {
	var d *C.neuronmem_device_t
	if err := b.use(func(h *C.neuronmem_buffer_t) error { return check(C.neuronmem_buffer_device(h, &d)) }); err != nil {
		return nil, err
	}
	return &Device{b.client, d}, nil
}

// ElementType is the buffer's element type.
func (b *Buffer) ElementType() (ElementType, error) {
	var t C.neuronmem_element_type_t
	err := b.use(func(h *C.neuronmem_buffer_t) error { return check(C.neuronmem_buffer_element_type(h, &t)) })
	return ElementType(t), err
}

// Dims is the buffer's shape.
func (b *Buffer) Dims() ([]int64, error) {
	var out []int64
	err := b.use(func(h *C.neuronmem_buffer_t) error {
		var d *C.int64_t
		var n C.size_t
		if err := check(C.neuronmem_buffer_dims(h, &d, &n)); err != nil {
			return err
		}
		out = make([]int64, int(n))
		for i, v := range cArray(d, n) {
			out[i] = int64(v)
		}
		return nil
	})
	return out, err
}

// Size is the bytes the buffer occupies (dense).
func (b *Buffer) Size() (uint64, error) {
	var n C.uint64_t
	err := b.use(func(h *C.neuronmem_buffer_t) error { return check(C.neuronmem_buffer_on_device_size(h, &n)) })
	return uint64(n), err
}

// IsDeleted reports whether Delete was called.
func (b *Buffer) IsDeleted() (bool, error) {
	var v C.bool
	err := b.use(func(h *C.neuronmem_buffer_t) error { return check(C.neuronmem_buffer_is_deleted(h, &v)) })
	return bool(v), err
}

// IsZeroCopy reports whether the buffer aliases host memory rather than owning a copy.
func (b *Buffer) IsZeroCopy() (bool, error) {
	var v C.bool
	err := b.use(func(h *C.neuronmem_buffer_t) error { return check(C.neuronmem_buffer_is_zero_copy(h, &v)) })
	return bool(v), err
}
