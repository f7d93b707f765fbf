package neuronmem

/*
#include "helpers.h"
#include <stdlib.h>
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/cgo"
	"sync"
	"time"
	"unsafe"
)

// ArgumentPlacement is what Execute does with an argument that is not in the memory its parameter names.
type ArgumentPlacement int

// The argument placements.
const (
	PlacementStrict   ArgumentPlacement = 0 // FAILED_PRECONDITION naming the argument and the kinds
	PlacementAutoCopy ArgumentPlacement = 1 // the runtime copies it there (counted as implicit)
)

// CompileOptions are compile options; the zero value means the defaults.
type CompileOptions struct {
	Entry             string // text only; "" = "main"
	Filename          string // text only; "" = "<input>"
	Policy            PlacementPolicy
	ArgumentPlacement ArgumentPlacement
	NumReplicas       uint32 // 0 = as many as the client's cores hold (cores / partitions)
	NumPartitions     uint32 // SPMD partitions; 0 = the module's mhlo.num_partitions, else 1
}

// Executable is a compiled graph for the client's NeuronCores. Close it before the client.
type Executable struct {
	mu     sync.RWMutex
	client *Client
	h      *C.neuronmem_executable_t
}

// Compile compiles StableHLO text (opts nil: defaults). Anything the executor cannot run is UNIMPLEMENTED
// "file:line:col: 'op': reason" here, never later.
func (c *Client) Compile(text string, opts *CompileOptions) (*Executable, error) {
	return c.compile(text, nil, opts)
}

// CompileManifest compiles the graph of a manifest loaded from StableHLO text (its entry and policy).
func (c *Client) CompileManifest(m *Manifest, opts *CompileOptions) (*Executable, error) {
	return c.compile("", m, opts)
}

func (c *Client) compile(text string, m *Manifest, opts *CompileOptions) (*Executable, error) {
	if opts == nil {
		opts = &CompileOptions{}
	}
	var ctext *C.char
	if m == nil {
		ctext = C.CString(text)
		defer C.free(unsafe.Pointer(ctext))
	}
	entry, filename := optCString(opts.Entry), optCString(opts.Filename)
	defer C.free(unsafe.Pointer(entry))
	defer C.free(unsafe.Pointer(filename))
	var h *C.neuronmem_executable_t
	call := func(mh *C.neuronmem_manifest_t) error {
		return c.use(func(ch *C.neuronmem_client_t) error {
			return check(C.nm_compile(ch, ctext, C.size_t(len(text)), mh, entry, filename, C.int(opts.Policy),
				C.int(opts.ArgumentPlacement), C.uint32_t(opts.NumReplicas), C.uint32_t(opts.NumPartitions), &h))
		})
	}
	var err error
	if m != nil {
		err = m.use(call)
	} else {
		err = call(nil)
	}
	if err != nil {
		return nil, err
	}
	e := &Executable{client: c, h: h}
	runtime.SetFinalizer(e, func(e *Executable) { e.Close() })
	return e, nil
}

func (e *Executable) use(fn func(h *C.neuronmem_executable_t) error) error {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.h == nil {
		return closedError("executable")
	}
	return fn(e.h)
}

// Close frees the executable; executions already submitted still run. Closing twice is a no-op.
func (e *Executable) Close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.h != nil {
		C.neuronmem_executable_destroy(e.h)
		e.h = nil
		runtime.SetFinalizer(e, nil)
	}
}

// ExecutableProperties are an executable's counts and sizes.
type ExecutableProperties struct {
	NumParameters, NumOutputs      int
	NumReplicas                    uint32
	PeakDeviceBytes, PeakHostBytes uint64
	NumOps, NumExplicitMoves       uint64
	NumPartitions                  uint32 // it runs on devices 0..NumReplicas*NumPartitions-1
	// Shape-polymorphic entries (-1 dims): the specializations compiled so far, one per argument-shape tuple.
	NumSpecializations uint64
	// The most devices one sdy.manual_computation whose body communicates runs at once (0: none).
	NumManualDevices uint64
}

// Properties returns the executable's counts and sizes.
func (e *Executable) Properties() (ExecutableProperties, error) {
	var out ExecutableProperties
	err := e.use(func(h *C.neuronmem_executable_t) error {
		var p C.neuronmem_executable_properties_t
		if err := check(C.nm_executable_properties(h, &p)); err != nil {
			return err
		}
		out = ExecutableProperties{int(p.num_parameters), int(p.num_outputs), uint32(p.num_replicas),
			uint64(p.peak_device_bytes), uint64(p.peak_host_bytes), uint64(p.num_ops), uint64(p.num_explicit_moves),
			uint32(p.num_partitions), uint64(p.num_specializations), uint64(p.num_manual_devices)}
		return nil
	})
	return out, err
}

// ExecutableValue is a parameter or an output.
type ExecutableValue struct {
	ElementType ElementType
	Dims        []int64
	MemoryKind  MemoryKind
	Bytes       uint64
	// Parameters: the output it is donated into; outputs: the parameter donated into it; -1 if none.
	Donation int64
}

func (e *Executable) values(outputs bool) ([]ExecutableValue, error) {
	p, err := e.Properties()
	if err != nil {
		return nil, err
	}
	n := p.NumParameters
	if outputs {
		n = p.NumOutputs
	}
	out := make([]ExecutableValue, n)
	err = e.use(func(h *C.neuronmem_executable_t) error {
		for i := range out {
			var v C.neuronmem_executable_value_t
			if err := check(C.nm_executable_value(h, boolInt(outputs), C.size_t(i), &v)); err != nil {
				return err
			}
			out[i] = ExecutableValue{ElementType(v.element_type), int64s(v.dims, v.num_dims),
				MemoryKind(v.memory_kind), uint64(v.bytes), int64(v.donation)}
		}
		return nil
	})
	return out, err
}

// Parameters are the entry function's parameters.
func (e *Executable) Parameters() ([]ExecutableValue, error) { return e.values(false) }

// Outputs are the entry function's outputs.
func (e *Executable) Outputs() ([]ExecutableValue, error) { return e.values(true) }

func (e *Executable) memoryFor(d *Device, index int, output bool) (*Memory, error) {
	var out *C.neuronmem_memory_t
	err := e.use(func(h *C.neuronmem_executable_t) error {
		return d.client.use(func(*C.neuronmem_client_t) error {
			if output {
				return check(C.neuronmem_executable_output_memory(h, d.h, C.size_t(index), &out))
			}
			return check(C.neuronmem_executable_parameter_memory(h, d.h, C.size_t(index), &out))
		})
	})
	if err != nil {
		return nil, err
	}
	return &Memory{d.client, out}, nil
}

// ParameterMemory is the memory of d that parameter index must live in at Execute.
func (e *Executable) ParameterMemory(d *Device, index int) (*Memory, error) {
	return e.memoryFor(d, index, false)
}

// OutputMemory is the memory of d that output index is allocated in.
func (e *Executable) OutputMemory(d *Device, index int) (*Memory, error) {
	return e.memoryFor(d, index, true)
}

// NoTimeout as an execution's timeout: no deadline, even when the client's Options.ExecutionTimeout sets one.
const NoTimeout = time.Duration(math.MaxInt64)

// timeoutNs is the C timeout_ns of a timeout: 0 -> zero (the client's default), NoTimeout -> UINT64_MAX (none),
// else its nanoseconds (callers refuse negative ones).
func timeoutNs(d time.Duration, zero uint64) C.uint64_t {
	switch {
	case d == 0:
		return C.uint64_t(zero)
	case d == NoTimeout:
		return C.uint64_t(math.MaxUint64)
	}
	return C.uint64_t(d.Nanoseconds())
}

// Execute submits one execution on d after wait and every argument's content: the result buffers, the done
// event and the Execution (statistics, Cancel). Donated arguments are deleted by the call; nonDonatable lists
// parameters not to donate this time.
func (e *Executable) Execute(d *Device, args []*Buffer, wait []*Event, nonDonatable []int) ([]*Buffer, *Event,
	*Execution, error) {
	return e.ExecuteTimeout(d, args, wait, nonDonatable, 0)
}

// ExecuteTimeout is Execute with a deadline: once timeout has passed since submission the execution stops
// (before its next op, or at once while queued) and its done event fails with DEADLINE_EXCEEDED. 0 = the
// client's Options.ExecutionTimeout; NoTimeout = none.
func (e *Executable) ExecuteTimeout(d *Device, args []*Buffer, wait []*Event, nonDonatable []int,
	timeout time.Duration) ([]*Buffer, *Event, *Execution, error) {
	if timeout < 0 {
		return nil, nil, nil, invalid("timeout %v is negative", timeout)
	}
	props, err := e.Properties()
	if err != nil {
		return nil, nil, nil, err
	}
	locks := readLocks{}
	defer locks.unlock()
	hs, err := lockedEventList(wait, locks)
	if err != nil {
		return nil, nil, nil, err
	}
	bufs := make([]*C.neuronmem_buffer_t, len(args)+1)
	for i, b := range args {
		if b == nil {
			return nil, nil, nil, invalid("args[%d] is nil", i)
		}
		locks.lock(&b.mu)
		if b.h == nil {
			return nil, nil, nil, &Error{Code: CodeFailedPrecondition, Message: fmt.Sprintf("args[%d] is closed", i)}
		}
		bufs[i] = b.h
	}
	nd := make([]C.size_t, len(nonDonatable)+1)
	for i, v := range nonDonatable {
		if v < 0 {
			return nil, nil, nil, invalid("nonDonatable[%d] = %d is negative", i, v)
		}
		nd[i] = C.size_t(v)
	}
	outs := make([]*C.neuronmem_buffer_t, props.NumOutputs+1)
	var done *C.neuronmem_event_t
	var x *C.neuronmem_execution_t
	err = e.use(func(h *C.neuronmem_executable_t) error {
		return d.client.use(func(*C.neuronmem_client_t) error {
			return check(C.nm_execute(h, d.h, &bufs[0], C.size_t(len(args)), firstOrNil(hs), C.size_t(len(hs)),
				&nd[0], C.size_t(len(nonDonatable)), timeoutNs(timeout, 0), &outs[0], &done, &x))
		})
	})
	if err != nil {
		return nil, nil, nil, err
	}
	results := make([]*Buffer, props.NumOutputs)
	for i := range results {
		results[i] = newBuffer(d.client, outs[i], nil, nil)
	}
	ex := &Execution{h: x}
	runtime.SetFinalizer(ex, func(x *Execution) { x.Close() })
	return results, newEvent(d.client, done, nil), ex, nil
}

// HostTransfer is what a launch's send or recv callback is called with (a stablehlo.send / recv with
// is_host_transfer): a send's payload to read, or a recv's results to fill (every element), as views of the
// executing core's memory, valid during the call only.
type HostTransfer struct {
	ChannelID   int64
	Device      int32
	ReplicaID   uint32
	PartitionID uint32
	Tensors     []KernelTensor
}

// HostFunc serves a host transfer. A non-nil error fails that device's execution (an *Error keeps its code);
// a panic is recovered and becomes CodeInternal. Called on a core's thread, several devices at once; a
// library call that could block returns FAILED_PRECONDITION there.
type HostFunc func(t *HostTransfer) error

// LaunchOptions are the optional parts of ExecuteDevices; nil means none.
type LaunchOptions struct {
	Waits         [][]*Event // Waits[d]: the events devices[d] waits for; nil = none
	NonDonatable  []int      // parameters not to donate this time, on every device
	SendCallbacks map[int64]HostFunc
	RecvCallbacks map[int64]HostFunc
	Timeout       time.Duration // every device's execution, as ExecuteTimeout's
	// LaunchID is the caller's id for a launch across the processes of a job (PJRT's launch_id; 0 = none,
	// docs/distributed.md): every process launching its devices of the launch gives the same id; a process
	// that gives another fails the launch's ops that talk to it with CodeFailedPrecondition naming both ids.
	LaunchID uint64
}

// launchArgs is the C args of a launch with opts' scalars (the timeout, the launch id) set, pointers NULL.
func launchArgs(opts *LaunchOptions) C.neuronmem_execute_devices_args_t {
	var a C.neuronmem_execute_devices_args_t
	C.nm_launch_args_init(&a)
	a.timeout_ns = timeoutNs(opts.Timeout, 0)
	a.launch_id = C.uint64_t(opts.LaunchID)
	return a
}

// hostCallbacks puts fns in C memory as neuronmem_host_callback_t entries (fn: the exported trampoline,
// user_data: a cgo.Handle appended to handles).
func hostCallbacks(fns map[int64]HostFunc, handles *[]cgo.Handle) (*C.neuronmem_host_callback_t, int,
	error) {
	if len(fns) == 0 {
		return nil, 0, nil
	}
	arr := (*C.neuronmem_host_callback_t)(C.calloc(C.size_t(len(fns)), C.size_t(unsafe.Sizeof(C.neuronmem_host_callback_t{}))))
	all := unsafe.Slice(arr, len(fns))
	i := 0
	for ch, fn := range fns {
		if fn == nil {
			C.free(unsafe.Pointer(arr))
			return nil, 0, invalid("the callback of channel %d is nil", ch)
		}
		h := cgo.NewHandle(fn)
		*handles = append(*handles, h)
		C.nm_host_callback(&all[i], C.int64_t(ch), C.uintptr_t(h))
		i++
	}
	return arr, len(fns), nil
}

// The C library calls this for every host transfer of a launch with callbacks from ExecuteDevices, with
// their cgo.Handle as user_data. Nothing unwinds into C.
//
//export neuronmemGoHostTransfer
func neuronmemGoHostTransfer(t *C.neuronmem_host_transfer_t, userData unsafe.Pointer) (status *C.neuronmem_status_t) {
	defer func() {
		if r := recover(); r != nil {
			status = newStatus(CodeInternal, fmt.Sprintf("the Go host callback panicked: %v", r))
		}
	}()
	fn := cgo.Handle(uintptr(userData)).Value().(HostFunc)
	ht := &HostTransfer{ChannelID: int64(t.channel_id), Device: int32(t.device), ReplicaID: uint32(t.replica_id),
		PartitionID: uint32(t.partition_id), Tensors: kernelTensors(t.tensors, t.num_tensors)}
	if err := fn(ht); err != nil {
		var ne *Error
		if errors.As(err, &ne) {
			return newStatus(ne.Code, ne.Message)
		}
		return newStatus(CodeUnknown, err.Error())
	}
	return nil
}

// ExecuteDevices submits one launch: an execution on each of devices (distinct devices the executable runs
// on), args[d] the arguments of devices[d]. Each runs on its core's own thread; a program with collectives or
// send/recv runs as one process grid over the devices, host transfers through opts' callbacks. It returns
// results[d], the done event and the Execution of each device; a refused launch submits nothing.
func (e *Executable) ExecuteDevices(devices []*Device, args [][]*Buffer, opts *LaunchOptions) (
	[][]*Buffer, []*Event, []*Execution, error) {
	if opts == nil {
		opts = &LaunchOptions{}
	}
	waits, nonDonatable := opts.Waits, opts.NonDonatable
	if opts.Timeout < 0 {
		return nil, nil, nil, invalid("Timeout %v is negative", opts.Timeout)
	}
	props, err := e.Properties()
	if err != nil {
		return nil, nil, nil, err
	}
	n := len(devices)
	if len(args) != n {
		return nil, nil, nil, invalid("%d argument lists for %d devices", len(args), n)
	}
	if waits != nil && len(waits) != n {
		return nil, nil, nil, invalid("%d wait lists for %d devices", len(waits), n)
	}
	per := 0
	if n > 0 {
		per = len(args[0])
	}
	// The Go arrays handed to C hold C pointers only; the wait lists (structs pointing at arrays) live in C
	// memory, since cgo forbids passing Go memory that holds Go pointers.
	devs := make([]*C.neuronmem_device_t, n+1)
	bufs := make([]*C.neuronmem_buffer_t, n*per+1)
	locks := readLocks{} // an argument may be given to every device, a wait to several
	defer locks.unlock()
	var client *Client
	for d, dev := range devices {
		if dev == nil {
			return nil, nil, nil, invalid("devices[%d] is nil", d)
		}
		if client == nil {
			client = dev.client
		}
		devs[d] = dev.h
		if len(args[d]) != per {
			return nil, nil, nil, invalid("device %d has %d arguments, device 0 has %d", d, len(args[d]), per)
		}
		for i, b := range args[d] {
			if b == nil {
				return nil, nil, nil, invalid("args[%d][%d] is nil", d, i)
			}
			locks.lock(&b.mu)
			if b.h == nil {
				return nil, nil, nil, &Error{Code: CodeFailedPrecondition,
					Message: fmt.Sprintf("args[%d][%d] is closed", d, i)}
			}
			bufs[d*per+i] = b.h
		}
	}
	if client == nil {
		client = e.client
	}
	var lists *C.neuronmem_event_list_t
	if waits != nil {
		lists = (*C.neuronmem_event_list_t)(C.calloc(C.size_t(n+1), C.size_t(unsafe.Sizeof(C.neuronmem_event_list_t{}))))
		defer C.free(unsafe.Pointer(lists))
		all := unsafe.Slice(lists, n+1)
		for d, w := range waits {
			hs, err := lockedEventList(w, locks)
			if err != nil {
				return nil, nil, nil, err
			}
			if len(hs) > 0 {
				arr := (**C.neuronmem_event_t)(C.calloc(C.size_t(len(hs)), C.size_t(unsafe.Sizeof(hs[0]))))
				defer C.free(unsafe.Pointer(arr))
				copy(unsafe.Slice(arr, len(hs)), hs)
				all[d].events = arr
				all[d].num_events = C.size_t(len(hs))
			}
		}
	}
	nd := make([]C.size_t, len(nonDonatable)+1)
	for i, v := range nonDonatable {
		if v < 0 {
			return nil, nil, nil, invalid("nonDonatable[%d] = %d is negative", i, v)
		}
		nd[i] = C.size_t(v)
	}
	var handles []cgo.Handle
	drop := func() {
		for _, h := range handles {
			h.Delete()
		}
	}
	sends, nSends, err := hostCallbacks(opts.SendCallbacks, &handles)
	if err != nil {
		drop()
		return nil, nil, nil, err
	}
	defer C.free(unsafe.Pointer(sends))
	recvs, nRecvs, err := hostCallbacks(opts.RecvCallbacks, &handles)
	if err != nil {
		drop()
		return nil, nil, nil, err
	}
	defer C.free(unsafe.Pointer(recvs))
	outs := make([]*C.neuronmem_buffer_t, n*props.NumOutputs+1)
	done := make([]*C.neuronmem_event_t, n+1)
	xs := make([]*C.neuronmem_execution_t, n+1)
	base := launchArgs(opts) // Go memory without Go pointers: C copies it
	err = e.use(func(h *C.neuronmem_executable_t) error {
		return client.use(func(*C.neuronmem_client_t) error {
			return check(C.nm_execute_devices(&base, h, &devs[0], C.size_t(n), &bufs[0], C.size_t(per), lists,
				&nd[0], C.size_t(len(nonDonatable)), sends, C.size_t(nSends), recvs, C.size_t(nRecvs), &outs[0],
				&done[0], &xs[0]))
		})
	})
	if err != nil {
		drop()
		return nil, nil, nil, err
	}
	results := make([][]*Buffer, n)
	events := make([]*Event, n)
	executions := make([]*Execution, n)
	for d := 0; d < n; d++ {
		results[d] = make([]*Buffer, props.NumOutputs)
		for k := range results[d] {
			results[d][k] = newBuffer(client, outs[d*props.NumOutputs+k], nil, nil)
		}
		events[d] = newEvent(client, done[d], nil)
		ex := &Execution{h: xs[d]}
		runtime.SetFinalizer(ex, func(x *Execution) { x.Close() })
		executions[d] = ex
	}
	if len(handles) > 0 {
		// The callbacks' handles go once every device of the launch has finished.
		var mu sync.Mutex
		remaining := n
		for _, ev := range events {
			if err := ev.OnReady(func(error) {
				mu.Lock()
				remaining--
				last := remaining == 0
				mu.Unlock()
				if last {
					drop()
				}
			}); err != nil {
				return nil, nil, nil, err
			}
		}
	}
	return results, events, executions, nil
}

// LogicalIDs are the replica and partition d runs: device d is replica d / NumPartitions, partition
// d % NumPartitions.
func (e *Executable) LogicalIDs(d *Device) (replica, partition uint32, err error) {
	var r, p C.uint32_t
	err = e.use(func(h *C.neuronmem_executable_t) error {
		return d.client.use(func(*C.neuronmem_client_t) error {
			return check(C.neuronmem_executable_logical_ids(h, d.h, &r, &p))
		})
	})
	return uint32(r), uint32(p), err
}

// Execution is one submitted execution: its statistics once its done event is ready.
type Execution struct {
	mu sync.RWMutex
	h  *C.neuronmem_execution_t
}

// Close frees the handle (the execution goes on). Closing twice is a no-op.
func (x *Execution) Close() {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.h != nil {
		C.neuronmem_execution_destroy(x.h)
		x.h = nil
		runtime.SetFinalizer(x, nil)
	}
}

func (x *Execution) use(fn func(h *C.neuronmem_execution_t) error) error {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.h == nil {
		return closedError("execution")
	}
	return fn(x.h)
}

// ExecutionStats are one finished execution's transfers, bytes and times (ns).
type ExecutionStats struct {
	ExplicitTransfers, ExplicitBytes, ImplicitTransfers, ImplicitBytes uint64
	OpNs, TransferNs, QueueNs                                          uint64
	// Messages received from other cores of the launch, each counted once, by its receiver.
	PeerTransfers, PeerBytes uint64
	// sdy.manual_computation devices on a client of more than one core: the most cores one computation ran its
	// devices on, and the most devices one ran on threads of their own (beyond the cores, or a core busy).
	ManualCores, ManualThreads uint64
}

// Stats returns the finished execution's statistics (FAILED_PRECONDITION before it finished).
func (x *Execution) Stats() (ExecutionStats, error) {
	var out ExecutionStats
	err := x.use(func(h *C.neuronmem_execution_t) error {
		var s C.neuronmem_execution_stats_t
		if err := check(C.nm_execution_stats(h, &s)); err != nil {
			return err
		}
		out = ExecutionStats{uint64(s.explicit_transfers), uint64(s.explicit_bytes), uint64(s.implicit_transfers),
			uint64(s.implicit_bytes), uint64(s.op_ns), uint64(s.transfer_ns), uint64(s.queue_ns),
			uint64(s.peer_transfers), uint64(s.peer_bytes), uint64(s.manual_cores), uint64(s.manual_threads)}
		return nil
	})
	return out, err
}

// TransferCounts are one execution's transfers from one memory kind to another.
type TransferCounts struct {
	ExplicitTransfers, ExplicitBytes, ImplicitTransfers, ImplicitBytes uint64
	PeerTransfers, PeerBytes                                           uint64
}

// Cancel stops the execution: queued, it fails at once; running, before its next op (an endless loop too). Its
// done event then fails with CANCELLED; cancelling a finished execution changes nothing. It never blocks.
func (x *Execution) Cancel() error {
	return x.use(func(h *C.neuronmem_execution_t) error { return check(C.neuronmem_execution_cancel(h)) })
}

// Transfers returns the finished execution's transfers from kind `from` to kind `to`.
func (x *Execution) Transfers(from, to MemoryKind) (TransferCounts, error) {
	var out TransferCounts
	err := x.use(func(h *C.neuronmem_execution_t) error {
		var t C.neuronmem_transfer_counts_t
		if err := check(C.nm_execution_transfers(h, C.int(from), C.int(to), &t)); err != nil {
			return err
		}
		out = TransferCounts{uint64(t.explicit_transfers), uint64(t.explicit_bytes), uint64(t.implicit_transfers),
			uint64(t.implicit_bytes), uint64(t.peer_transfers), uint64(t.peer_bytes)}
		return nil
	})
	return out, err
}
