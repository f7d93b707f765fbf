package neuronmem

/*
#include "helpers.h"
#include <stdlib.h>
*/
import "C"

import (
	"fmt"
	"runtime"
	"runtime/cgo"
	"sync"
	"time"
	"unsafe"
)

// MemoryKind is where a memory lives (neuronmem_memory_kind_t).
type MemoryKind int

// The memory kinds.
const (
	KindDevice       MemoryKind = 0 // one NeuronCore's HBM arena
	KindPinnedHost   MemoryKind = 1 // the client's page-locked host arena
	KindUnpinnedHost MemoryKind = 2 // ordinary pageable host memory
)

func (k MemoryKind) String() string {
	switch k {
	case KindDevice:
		return "device"
	case KindPinnedHost:
		return "pinned_host"
	case KindUnpinnedHost:
		return "unpinned_host"
	}
	return fmt.Sprintf("MemoryKind(%d)", int(k))
}

// MlockMode says what to do when the pinned-host arena cannot be page-locked.
type MlockMode int

// The mlock modes.
const (
	MlockBestEffort MlockMode = 0
	MlockRequired   MlockMode = 1
	MlockDisabled   MlockMode = 2
)

// Options of NewClient; zero fields mean the library's defaults (2 cores, 64 MiB per core, 64 MiB pinned).
type Options struct {
	NumCores           uint32
	MlockMode          MlockMode
	DeviceBytesPerCore uint64
	PinnedHostBytes    uint64
	// ExecutionTimeout: how long every execution that sets no timeout of its own may take from submission
	// before it fails with DEADLINE_EXCEEDED; 0 = no limit.
	ExecutionTimeout time.Duration
}

// Client owns the NeuronCores, memories and pinned-host arena. Its methods are safe for concurrent use;
// Close waits for calls in flight.
type Client struct {
	mu        sync.RWMutex
	h         *C.neuronmem_client_t
	liveHosts int // HostMemory not yet freed: the C library would destroy the client anyway
	kmu       sync.Mutex
	kernels   []cgo.Handle // RegisterKernel's kernels: deleted once the client is destroyed
}

// NewClient creates a client (opts nil: all defaults).
func NewClient(opts *Options) (*Client, error) {
	if opts == nil {
		opts = &Options{}
	}
	if opts.ExecutionTimeout < 0 {
		return nil, invalid("ExecutionTimeout %v is negative", opts.ExecutionTimeout)
	}
	var h *C.neuronmem_client_t
	if err := check(C.nm_client_create(C.uint32_t(opts.NumCores), C.int(opts.MlockMode),
		C.uint64_t(opts.DeviceBytesPerCore), C.uint64_t(opts.PinnedHostBytes), timeoutNs(opts.ExecutionTimeout, 0),
		&h)); err != nil {
		return nil, err
	}
	c := &Client{h: h}
	runtime.SetFinalizer(c, func(c *Client) { _ = c.Close() })
	return c, nil
}

// use runs fn with the client's handle under the read lock; a closed client is FAILED_PRECONDITION.
func (c *Client) use(fn func(h *C.neuronmem_client_t) error) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.h == nil {
		return closedError("client")
	}
	return fn(c.h)
}

// Close destroys the client. FAILED_PRECONDITION while buffers or host memory of it are alive (nothing is
// destroyed then). Closing twice is a no-op.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.h == nil {
		return nil
	}
	if c.liveHosts > 0 {
		return &Error{Code: CodeFailedPrecondition,
			Message: fmt.Sprintf("%d host allocation(s) of the client are still live", c.liveHosts)}
	}
	if err := check(C.neuronmem_client_destroy(c.h)); err != nil {
		return err
	}
	c.h = nil
	runtime.SetFinalizer(c, nil)
	c.kmu.Lock()
	for _, h := range c.kernels { // no executable or execution of the client is left to call them
		h.Delete()
	}
	c.kernels = nil
	c.kmu.Unlock()
	return nil
}

func (c *Client) str(fn func(*C.neuronmem_client_t, *C.neuronmem_string_t) *C.neuronmem_status_t) (string, error) {
	var s string
	err := c.use(func(h *C.neuronmem_client_t) error {
		var out C.neuronmem_string_t
		if err := check(fn(h, &out)); err != nil {
			return err
		}
		s = goString(out)
		return nil
	})
	return s, err
}

// PlatformName is "neuron".
func (c *Client) PlatformName() (string, error) {
	return c.str(func(h *C.neuronmem_client_t, o *C.neuronmem_string_t) *C.neuronmem_status_t {
		return C.neuronmem_client_platform_name(h, o)
	})
}

// PlatformVersion is e.g. "libneuronmem 0.2.0".
func (c *Client) PlatformVersion() (string, error) {
	return c.str(func(h *C.neuronmem_client_t, o *C.neuronmem_string_t) *C.neuronmem_status_t {
		return C.neuronmem_client_platform_version(h, o)
	})
}

// Extensions are the names of the extension structs the client accepts (none in this release).
func (c *Client) Extensions() ([]string, error) {
	var names []string
	err := c.use(func(h *C.neuronmem_client_t) error {
		var arr *C.neuronmem_string_t
		var n C.size_t
		if err := check(C.neuronmem_client_extensions(h, &arr, &n)); err != nil {
			return err
		}
		for _, s := range cArray(arr, n) {
			names = append(names, goString(s))
		}
		return nil
	})
	return names, err
}

// Devices are the client's NeuronCores in id order.
func (c *Client) Devices() ([]*Device, error) {
	var out []*Device
	err := c.use(func(h *C.neuronmem_client_t) error {
		var arr **C.neuronmem_device_t
		var n C.size_t
		if err := check(C.neuronmem_client_devices(h, &arr, &n)); err != nil {
			return err
		}
		for _, d := range cArray(arr, n) {
			out = append(out, &Device{c, d})
		}
		return nil
	})
	return out, err
}

// Memories are every memory of the client in id order.
func (c *Client) Memories() ([]*Memory, error) {
	var out []*Memory
	err := c.use(func(h *C.neuronmem_client_t) error {
		var arr **C.neuronmem_memory_t
		var n C.size_t
		if err := check(C.neuronmem_client_memories(h, &arr, &n)); err != nil {
			return err
		}
		for _, m := range cArray(arr, n) {
			out = append(out, &Memory{c, m})
		}
		return nil
	})
	return out, err
}

// LookupDevice is the device with global id id (NOT_FOUND if none).
func (c *Client) LookupDevice(id int32) (*Device, error) {
	var d *C.neuronmem_device_t
	err := c.use(func(h *C.neuronmem_client_t) error {
		return check(C.neuronmem_client_lookup_device(h, C.int32_t(id), &d))
	})
	if err != nil {
		return nil, err
	}
	return &Device{c, d}, nil
}

// LookupMemory is the memory with id id (NOT_FOUND if none).
func (c *Client) LookupMemory(id int32) (*Memory, error) {
	var m *C.neuronmem_memory_t
	err := c.use(func(h *C.neuronmem_client_t) error {
		return check(C.neuronmem_client_lookup_memory(h, C.int32_t(id), &m))
	})
	if err != nil {
		return nil, err
	}
	return &Memory{c, m}, nil
}

// Process is the client's place in its job: process index of n (0 of 1 for a client of one process).
func (c *Client) Process() (index, n uint32, err error) {
	var ci, cn C.uint32_t
	err = c.use(func(h *C.neuronmem_client_t) error { return check(C.neuronmem_client_process(h, &ci, &cn)) })
	return uint32(ci), uint32(cn), err
}

// JobTraffic is what a client's job transport moved since the client was created (headers included).
type JobTraffic struct {
	MessagesSent, BytesSent, MessagesReceived, BytesReceived, MessagesDropped uint64
}

// JobTraffic returns the client's job traffic (all zero for a client of one process).
func (c *Client) JobTraffic() (JobTraffic, error) {
	var out JobTraffic
	err := c.use(func(h *C.neuronmem_client_t) error {
		var t C.neuronmem_job_traffic_t
		if err := check(C.nm_client_job_traffic(h, &t)); err != nil {
			return err
		}
		out = JobTraffic{uint64(t.messages_sent), uint64(t.bytes_sent), uint64(t.messages_received),
			uint64(t.bytes_received), uint64(t.messages_dropped)}
		return nil
	})
	return out, err
}

// DescribeDeviceID describes the job's device with global id id, this client's or another process's
// (NOT_FOUND outside the job).
func (c *Client) DescribeDeviceID(id int32) (DeviceDescription, error) {
	var out DeviceDescription
	err := c.use(func(h *C.neuronmem_client_t) error {
		var dd C.neuronmem_device_description_t
		if err := check(C.nm_client_describe_device_id(h, C.int32_t(id), &dd)); err != nil {
			return err
		}
		out = DeviceDescription{int32(dd.id), int32(dd.process_index), int32(dd.local_id), goString(dd.kind),
			goString(dd.debug_string), goString(dd.to_string)}
		return nil
	})
	return out, err
}

// DirectoryStorePut sets key to value in the directory store at dir (one file per key, written atomically).
func DirectoryStorePut(dir, key string, value []byte) error {
	cdir, ckey, cvalue := C.CString(dir), C.CString(key), C.CBytes(value)
	defer C.free(unsafe.Pointer(cdir))
	defer C.free(unsafe.Pointer(ckey))
	defer C.free(cvalue)
	return check(C.nm_directory_store_put(cdir, ckey, C.size_t(len(key)), (*C.char)(cvalue), C.size_t(len(value))))
}

// DirectoryStoreGet waits up to timeout for key in the directory store at dir.
func DirectoryStoreGet(dir, key string, timeout time.Duration) ([]byte, error) {
	var v *C.char
	var n C.size_t
	cdir, ckey := C.CString(dir), C.CString(key)
	defer C.free(unsafe.Pointer(cdir))
	defer C.free(unsafe.Pointer(ckey))
	if err := check(C.nm_directory_store_get(cdir, ckey, C.size_t(len(key)), C.uint64_t(timeout.Nanoseconds()), &v,
		&n)); err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(v))
	return C.GoBytes(unsafe.Pointer(v), C.int(n)), nil
}

// NewEvent creates a pending event that the caller completes (Event.Complete): the frontend's own work as a
// dependency of transfers.
func (c *Client) NewEvent() (*Event, error) {
	var e *C.neuronmem_event_t
	if err := c.use(func(h *C.neuronmem_client_t) error { return check(C.neuronmem_event_create(h, &e)) }); err != nil {
		return nil, err
	}
	return newEvent(c, e, nil), nil
}

// Device is a NeuronCore, borrowed from its client: usable while the client is open.
type Device struct {
	client *Client
	h      *C.neuronmem_device_t
}

// Client is the device's client.
func (d *Device) Client() *Client { return d.client }

// DeviceDescription is a device as PJRT describes it.
type DeviceDescription struct {
	ID, ProcessIndex, LocalID int32
	Kind, DebugString, String string
}

// Describe returns the device's description.
func (d *Device) Describe() (DeviceDescription, error) {
	var out DeviceDescription
	err := d.client.use(func(*C.neuronmem_client_t) error {
		var dd C.neuronmem_device_description_t
		if err := check(C.nm_device_describe(d.h, &dd)); err != nil {
			return err
		}
		out = DeviceDescription{int32(dd.id), int32(dd.process_index), int32(dd.local_id), goString(dd.kind),
			goString(dd.debug_string), goString(dd.to_string)}
		return nil
	})
	return out, err
}

func (d *Device) memory(fn func(**C.neuronmem_memory_t) *C.neuronmem_status_t) (*Memory, error) {
	var m *C.neuronmem_memory_t
	if err := d.client.use(func(*C.neuronmem_client_t) error { return check(fn(&m)) }); err != nil {
		return nil, err
	}
	return &Memory{d.client, m}, nil
}

// DefaultMemory is the device's own HBM memory.
func (d *Device) DefaultMemory() (*Memory, error) {
	return d.memory(func(o **C.neuronmem_memory_t) *C.neuronmem_status_t {
		return C.neuronmem_device_default_memory(d.h, o)
	})
}

// MemoryOfKind is the device's memory of kind k.
func (d *Device) MemoryOfKind(k MemoryKind) (*Memory, error) {
	return d.memory(func(o **C.neuronmem_memory_t) *C.neuronmem_status_t {
		return C.neuronmem_device_memory_of_kind(d.h, C.neuronmem_memory_kind_t(k), o)
	})
}

// AddressableMemories are the memories the device can address, in id order.
func (d *Device) AddressableMemories() ([]*Memory, error) {
	var out []*Memory
	err := d.client.use(func(*C.neuronmem_client_t) error {
		var arr **C.neuronmem_memory_t
		var n C.size_t
		if err := check(C.neuronmem_device_addressable_memories(d.h, &arr, &n)); err != nil {
			return err
		}
		for _, m := range cArray(arr, n) {
			out = append(out, &Memory{d.client, m})
		}
		return nil
	})
	return out, err
}

// Same reports whether d and o are the same device.
func (d *Device) Same(o *Device) bool { return o != nil && d.h == o.h }

// Memory is a device HBM, pinned-host or unpinned-host memory, borrowed from its client.
type Memory struct {
	client *Client
	h      *C.neuronmem_memory_t
}

// Client is the memory's client.
func (m *Memory) Client() *Client { return m.client }

// Same reports whether m and o are the same memory.
func (m *Memory) Same(o *Memory) bool { return o != nil && m.h == o.h }

// MemoryDescription is a memory as PJRT describes it.
type MemoryDescription struct {
	ID                              int32
	Kind                            MemoryKind
	KindName, DebugString, ToString string
}

// Describe returns the memory's description.
func (m *Memory) Describe() (MemoryDescription, error) {
	var out MemoryDescription
	err := m.client.use(func(*C.neuronmem_client_t) error {
		var md C.neuronmem_memory_description_t
		if err := check(C.nm_memory_describe(m.h, &md)); err != nil {
			return err
		}
		out = MemoryDescription{int32(md.id), MemoryKind(md.kind_id), goString(md.kind), goString(md.debug_string),
			goString(md.to_string)}
		return nil
	})
	return out, err
}

// ID is the memory's stable id (2k device, 2k+1 pinned_host, 2N+k unpinned_host).
func (m *Memory) ID() (int32, error) {
	d, err := m.Describe()
	return d.ID, err
}

// Kind is the memory's kind.
func (m *Memory) Kind() (MemoryKind, error) {
	var k C.neuronmem_memory_kind_t
	err := m.client.use(func(*C.neuronmem_client_t) error { return check(C.neuronmem_memory_kind(m.h, &k)) })
	return MemoryKind(k), err
}

// AddressableDevices are the devices that can address the memory.
func (m *Memory) AddressableDevices() ([]*Device, error) {
	var out []*Device
	err := m.client.use(func(*C.neuronmem_client_t) error {
		var arr **C.neuronmem_device_t
		var n C.size_t
		if err := check(C.neuronmem_memory_addressable_devices(m.h, &arr, &n)); err != nil {
			return err
		}
		for _, d := range cArray(arr, n) {
			out = append(out, &Device{m.client, d})
		}
		return nil
	})
	return out, err
}

// OwnedBy reports whether c owns the memory (neuronmem_memory_client).
func (m *Memory) OwnedBy(c *Client) (bool, error) {
	var owner *C.neuronmem_client_t
	err := m.client.use(func(*C.neuronmem_client_t) error { return check(C.neuronmem_memory_client(m.h, &owner)) })
	if err != nil {
		return false, err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.h != nil && c.h == owner, nil
}

// MemoryStats is a snapshot of a memory's arena.
type MemoryStats struct {
	Capacity, BytesInUse, PeakBytesInUse, LiveAllocations, LargestFreeBlock, TotalAllocations uint64
	IsLocked, IsShared                                                                        bool
}

// Stats returns the memory's arena statistics.
func (m *Memory) Stats() (MemoryStats, error) {
	var out MemoryStats
	err := m.client.use(func(*C.neuronmem_client_t) error {
		var s C.neuronmem_memory_stats_t
		if err := check(C.nm_memory_stats(m.h, &s)); err != nil {
			return err
		}
		out = MemoryStats{uint64(s.capacity), uint64(s.bytes_in_use), uint64(s.peak_bytes_in_use),
			uint64(s.live_allocations), uint64(s.largest_free_block), uint64(s.total_allocations), bool(s.is_locked),
			bool(s.is_shared)}
		return nil
	})
	return out, err
}

// HostMemory is memory in the client's pinned-host arena (C memory, not Go memory): what asynchronous
// transfers and zero-copy uploads read and write. Free refuses while a buffer or event still uses it.
type HostMemory struct {
	client *Client
	mu     sync.Mutex
	ptr    unsafe.Pointer
	size   int
	users  int // buffers aliasing it and transfers in flight
}

// HostAllocate allocates size bytes in the pinned-host arena (alignment 0 = 64).
func (c *Client) HostAllocate(size, alignment uint64) (*HostMemory, error) {
	var p unsafe.Pointer
	err := c.use(func(h *C.neuronmem_client_t) error {
		return check(C.neuronmem_client_host_allocate(h, C.uint64_t(size), C.uint64_t(alignment), &p))
	})
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.liveHosts++
	c.mu.Unlock()
	hm := &HostMemory{client: c, ptr: p, size: int(size)}
	runtime.SetFinalizer(hm, func(hm *HostMemory) { _ = hm.Free() })
	return hm, nil
}

// Bytes views the memory (nil once freed). The slice is valid until Free: do not keep it past that.
func (hm *HostMemory) Bytes() []byte {
	hm.mu.Lock()
	defer hm.mu.Unlock()
	if hm.ptr == nil {
		return nil
	}
	return unsafe.Slice((*byte)(hm.ptr), hm.size)
}

// Len is the allocation's size in bytes.
func (hm *HostMemory) Len() int { return hm.size }

// acquire pins [offset, offset+n) for a buffer or a transfer; release undoes it.
func (hm *HostMemory) acquire(offset, n uint64) (unsafe.Pointer, error) {
	hm.mu.Lock()
	defer hm.mu.Unlock()
	if hm.ptr == nil {
		return nil, closedError("host memory")
	}
	if offset > uint64(hm.size) || n > uint64(hm.size)-offset {
		return nil, invalid("range [%d, %d) is outside the %d-byte host memory", offset, offset+n, hm.size)
	}
	hm.users++
	return unsafe.Add(hm.ptr, offset), nil
}

func (hm *HostMemory) release() {
	hm.mu.Lock()
	hm.users--
	hm.mu.Unlock()
}

// Free returns the memory to the arena. FAILED_PRECONDITION while a buffer or transfer uses it; freeing
// twice is a no-op.
func (hm *HostMemory) Free() error {
	hm.mu.Lock()
	defer hm.mu.Unlock()
	if hm.ptr == nil {
		return nil
	}
	if hm.users > 0 {
		return &Error{Code: CodeFailedPrecondition,
			Message: fmt.Sprintf("host memory is used by %d buffer(s) or transfer(s)", hm.users)}
	}
	c := hm.client
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.h == nil {
		return closedError("client")
	}
	if err := check(C.neuronmem_client_host_free(c.h, hm.ptr)); err != nil {
		return err
	}
	hm.ptr = nil
	c.liveHosts--
	runtime.SetFinalizer(hm, nil)
	return nil
}

// IsPinned reports whether the host memory lies in the client's pinned-host arena (always true for memory
// from HostAllocate of this client).
func (c *Client) IsPinned(hm *HostMemory) (bool, error) {
	p, err := hm.acquire(0, 0)
	if err != nil {
		return false, err
	}
	defer hm.release()
	return c.isPinned(p, uint64(hm.size))
}

// IsPinnedBytes reports whether a Go byte slice lies in the pinned-host arena (it never does unless it is a
// HostMemory's Bytes()).
func (c *Client) IsPinnedBytes(b []byte) (bool, error) {
	if len(b) == 0 {
		return false, nil
	}
	return c.isPinned(unsafe.Pointer(&b[0]), uint64(len(b)))
}

func (c *Client) isPinned(p unsafe.Pointer, n uint64) (bool, error) {
	var out C.bool
	err := c.use(func(h *C.neuronmem_client_t) error {
		return check(C.neuronmem_client_host_is_pinned(h, p, C.uint64_t(n), &out))
	})
	return bool(out), err
}

// cString is a C copy of s, freed by the caller.
func cString(s string) *C.char { return C.CString(s) }

func freeC(p unsafe.Pointer) { C.free(p) }
