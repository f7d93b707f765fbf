package neuronmem

/*
#include "helpers.h"
#include <stdlib.h>
*/
import "C"

import (
	"runtime"
	"runtime/cgo"
	"sync"
	"unsafe"
)

// PlacementPolicy is where unannotated results live.
type PlacementPolicy int

// The placement policies.
const (
	PolicyDevice       PlacementPolicy = 0 // results without mhlo.memory_kind live in `device`
	PolicyTorchNeuronx PlacementPolicy = 1 // on the device only if every argument is there (torch-neuronx)
)

// ManifestOptions are load options; the zero value means the defaults (entry "main", 2 cores).
type ManifestOptions struct {
	Entry    string // entry function; "" = "main"
	Filename string // name used in error messages; "" = "<input>" (or the path)
	Policy   PlacementPolicy
	NumCores uint32
}

// Manifest is the placement manifest of compiled StableHLO: where every argument and result of the entry
// function lives. Immutable; safe for concurrent use.
type Manifest struct {
	mu sync.RWMutex
	h  *C.neuronmem_manifest_t
}

func newManifest(h *C.neuronmem_manifest_t) *Manifest {
	m := &Manifest{h: h}
	runtime.SetFinalizer(m, func(m *Manifest) { m.Close() })
	return m
}

func optCString(s string) *C.char {
	if s == "" {
		return nil
	}
	return C.CString(s)
}

// LoadManifestText loads the manifest from StableHLO text (opts nil: defaults).
func LoadManifestText(text string, opts *ManifestOptions) (*Manifest, error) {
	if opts == nil {
		opts = &ManifestOptions{}
	}
	ctext := C.CString(text)
	defer C.free(unsafe.Pointer(ctext))
	entry, filename := optCString(opts.Entry), optCString(opts.Filename)
	defer C.free(unsafe.Pointer(entry))
	defer C.free(unsafe.Pointer(filename))
	var h *C.neuronmem_manifest_t
	if err := check(C.nm_manifest_load_text(ctext, C.size_t(len(text)), entry, filename, C.int(opts.Policy),
		C.uint32_t(opts.NumCores), &h)); err != nil {
		return nil, err
	}
	return newManifest(h), nil
}

// LoadManifestFile loads the manifest from a StableHLO file (opts.Filename is unused: the path names it).
func LoadManifestFile(path string, opts *ManifestOptions) (*Manifest, error) {
	if opts == nil {
		opts = &ManifestOptions{}
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	entry := optCString(opts.Entry)
	defer C.free(unsafe.Pointer(entry))
	var h *C.neuronmem_manifest_t
	if err := check(C.nm_manifest_load_file(cpath, entry, C.int(opts.Policy), C.uint32_t(opts.NumCores),
		&h)); err != nil {
		return nil, err
	}
	return newManifest(h), nil
}

// LoadManifestJSON loads a manifest from its JSON form (Manifest.JSON).
func LoadManifestJSON(json string) (*Manifest, error) {
	cjson := C.CString(json)
	defer C.free(unsafe.Pointer(cjson))
	var h *C.neuronmem_manifest_t
	if err := check(C.neuronmem_manifest_load_json(cjson, C.size_t(len(json)), &h)); err != nil {
		return nil, err
	}
	return newManifest(h), nil
}

// ListEntries returns the public functions of StableHLO text in source order: the entries a manifest may load.
func ListEntries(text, filename string) ([]string, error) {
	ctext := C.CString(text)
	defer C.free(unsafe.Pointer(ctext))
	cname := optCString(filename)
	defer C.free(unsafe.Pointer(cname))
	var names []string
	h := cgo.NewHandle(&names)
	defer h.Delete()
	if err := check(C.nm_list_entries(ctext, C.size_t(len(text)), cname, C.uintptr_t(h))); err != nil {
		return nil, err
	}
	return names, nil
}

// WriteArtifact writes StableHLO text (or an artifact) as a StableHLO portable artifact: the vhlo MLIR bytecode
// jax.export ships, for StableHLO target ("1.9.0"; "" = the newest the library reads, also its producer
// "StableHLO_v<version>"). filename ("" = "<input>") prefixes parse errors and is the file of the ops'
// locations. CodeInvalidArgument for bad text, a target outside 1.0.0 to the newest, more than one module, or
// a program vhlo cannot hold at the target (chlo ops, an attribute of a newer op version), naming the op.
func WriteArtifact(text, target, filename string) ([]byte, error) {
	ctext := C.CString(text)
	defer C.free(unsafe.Pointer(ctext))
	cname, ctarget := optCString(filename), optCString(target)
	defer C.free(unsafe.Pointer(cname))
	defer C.free(unsafe.Pointer(ctarget))
	var out []byte
	h := cgo.NewHandle(&out)
	defer h.Delete()
	if err := check(C.nm_write_artifact(ctext, C.size_t(len(text)), cname, ctarget, C.uintptr_t(h))); err != nil {
		return nil, err
	}
	return out, nil
}

// Close frees the manifest. Closing twice is a no-op.
func (m *Manifest) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.h != nil {
		C.neuronmem_manifest_destroy(m.h)
		m.h = nil
		runtime.SetFinalizer(m, nil)
	}
}

func (m *Manifest) use(fn func(h *C.neuronmem_manifest_t) error) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.h == nil {
		return closedError("manifest")
	}
	return fn(m.h)
}

// JSON is the manifest in its JSON form.
func (m *Manifest) JSON() (string, error) {
	var s string
	err := m.use(func(h *C.neuronmem_manifest_t) error {
		var out C.neuronmem_string_t
		if err := check(C.neuronmem_manifest_to_json(h, &out)); err != nil {
			return err
		}
		s = goString(out)
		return nil
	})
	return s, err
}

// Entry is the module's and the entry function's names.
func (m *Manifest) Entry() (module, entry string, err error) {
	err = m.use(func(h *C.neuronmem_manifest_t) error {
		var mod, ent C.neuronmem_string_t
		if err := check(C.neuronmem_manifest_entry(h, &mod, &ent)); err != nil {
			return err
		}
		module, entry = goString(mod), goString(ent)
		return nil
	})
	return
}

// ManifestCounts are the sizes of each part of a manifest.
type ManifestCounts struct {
	Arguments, Results, Moves, HostCompute, Kernels, CustomCallTargets, Channels, Warnings, Composites int
}

// Counts returns the manifest's counts.
func (m *Manifest) Counts() (ManifestCounts, error) {
	var out ManifestCounts
	err := m.use(func(h *C.neuronmem_manifest_t) error {
		var c C.neuronmem_manifest_counts_t
		if err := check(C.nm_manifest_counts(h, &c)); err != nil {
			return err
		}
		out = ManifestCounts{int(c.num_arguments), int(c.num_results), int(c.num_moves), int(c.num_host_compute),
			int(c.num_kernels), int(c.num_custom_call_targets), int(c.num_channels), int(c.num_warnings),
			int(c.num_composites)}
		return nil
	})
	return out, err
}

// Value is an argument or result of the entry function.
type Value struct {
	Index             int
	MemoryKind        MemoryKind
	Name, ElementName string      // SSA name or jax.result_info; "f32", "bf16", "tuple", ...
	ElementType       ElementType // to upload with; -1 if none fits
	KindExplicit      bool
	Dims              []int64 // -1 for a dynamic dimension
	AliasingOutput    int64
	BufferDonor       bool
	Line, Column      int
	Attributes        map[string]string
}

// Size is the value's dense size in bytes (an error for dynamic shapes or no element type).
func (v Value) Size() (uint64, error) {
	if v.ElementType < 0 {
		return 0, &Error{Code: CodeUnimplemented, Message: v.ElementName + " has no buffer element type"}
	}
	return byteSize(v.ElementType, v.Dims)
}

func int64s(p *C.int64_t, n C.size_t) []int64 {
	out := make([]int64, int(n))
	for i, v := range cArray(p, n) {
		out[i] = int64(v)
	}
	return out
}

func (m *Manifest) values(isResult bool) ([]Value, error) {
	var out []Value
	err := m.use(func(h *C.neuronmem_manifest_t) error {
		var c C.neuronmem_manifest_counts_t
		if err := check(C.nm_manifest_counts(h, &c)); err != nil {
			return err
		}
		n := c.num_arguments
		if isResult {
			n = c.num_results
		}
		for i := C.size_t(0); i < n; i++ {
			var v C.neuronmem_manifest_value_t
			if err := check(C.nm_manifest_value(h, boolInt(isResult), i, &v)); err != nil {
				return err
			}
			val := Value{int(v.index), MemoryKind(v.memory_kind), goString(v.name), goString(v.element_type),
				ElementType(v.buffer_element_type), bool(v.kind_explicit), int64s(v.dims, v.num_dims),
				int64(v.aliasing_output), bool(v.buffer_donor), int(v.line), int(v.column), map[string]string{}}
			for a := C.size_t(0); a < v.num_attributes; a++ {
				var k, s C.neuronmem_string_t
				if err := check(C.neuronmem_manifest_value_attribute(h, C.bool(isResult), i, a, &k, &s)); err != nil {
					return err
				}
				val.Attributes[goString(k)] = goString(s)
			}
			out = append(out, val)
		}
		return nil
	})
	return out, err
}

// Arguments are the entry function's arguments.
func (m *Manifest) Arguments() ([]Value, error) { return m.values(false) }

// Results are the entry function's results.
func (m *Manifest) Results() ([]Value, error) { return m.values(true) }

// Move is an intra-graph move between memory kinds.
type Move struct {
	Function, Value, Result, Spelling, FromKind, ToKind string
	FromMemoryKind, ToMemoryKind                        MemoryKind
	ElementName                                         string
	Dims                                                []int64
	Line, Column                                        int
}

// HostCompute is a host-compute region.
type HostCompute struct {
	Op, Function string
	Line, Column int
}

// Kernel is a custom NKI kernel with its decoded backend_config.
type Kernel struct {
	Function, FuncName, Binary string
	Grid                       []int64
	InputNames, OutputNames    []string
	NumOperands, NumResults    int
	Line, Column               int
}

// Channel is a send or recv.
type Channel struct {
	Function, Op      string
	Handle            int64
	Type              int
	IsHostTransfer    bool
	SourceTargetPairs [][2]int64
	NumPayloads       int
	Line, Column      int
}

// Composite is a stablehlo.composite (jax.lax.composite, quantized patterns): it runs its decomposition
// function unless a kernel registered under its name takes it over.
type Composite struct {
	Function, Name, Decomposition string
	Version                       int64       // 0 when absent (the spec's default)
	Attributes                    [][2]string // composite_attributes as (key, value as written), in order
	Line, Column                  int
}

// Parts are a manifest's moves, host-compute regions, kernels, custom-call targets (with their call counts),
// channels, warnings and composites.
type Parts struct {
	Moves             []Move
	HostCompute       []HostCompute
	Kernels           []Kernel
	CustomCallTargets map[string]uint64
	Channels          []Channel
	Warnings          []string
	Composites        []Composite
}

// Parts reads every move, host-compute region, kernel, custom-call target, channel, warning and composite.
func (m *Manifest) Parts() (Parts, error) {
	p := Parts{CustomCallTargets: map[string]uint64{}}
	err := m.use(func(h *C.neuronmem_manifest_t) error {
		var c C.neuronmem_manifest_counts_t
		if err := check(C.nm_manifest_counts(h, &c)); err != nil {
			return err
		}
		for i := C.size_t(0); i < c.num_moves; i++ {
			var v C.neuronmem_manifest_move_t
			if err := check(C.nm_manifest_move(h, i, &v)); err != nil {
				return err
			}
			p.Moves = append(p.Moves, Move{goString(v.function), goString(v.value), goString(v.result),
				goString(v.spelling), goString(v.from_kind), goString(v.to_kind), MemoryKind(v.from_memory_kind),
				MemoryKind(v.to_memory_kind), goString(v.element_type), int64s(v.dims, v.num_dims), int(v.line),
				int(v.column)})
		}
		for i := C.size_t(0); i < c.num_host_compute; i++ {
			var op, fn C.neuronmem_string_t
			var line, col C.uint32_t
			if err := check(C.neuronmem_manifest_host_compute(h, i, &op, &fn, &line, &col)); err != nil {
				return err
			}
			p.HostCompute = append(p.HostCompute, HostCompute{goString(op), goString(fn), int(line), int(col)})
		}
		for i := C.size_t(0); i < c.num_kernels; i++ {
			var k C.neuronmem_manifest_kernel_t
			if err := check(C.nm_manifest_kernel(h, i, &k)); err != nil {
				return err
			}
			kern := Kernel{Function: goString(k.function), FuncName: goString(k.func_name),
				Binary: goString(k.binary), Grid: int64s(k.grid, k.grid_rank), NumOperands: int(k.num_operands),
				NumResults: int(k.num_results), Line: int(k.line), Column: int(k.column)}
			for _, io := range []struct {
				out   bool
				n     C.size_t
				names *[]string
			}{{false, k.num_input_names, &kern.InputNames}, {true, k.num_output_names, &kern.OutputNames}} {
				for j := C.size_t(0); j < io.n; j++ {
					var s C.neuronmem_string_t
					if err := check(C.neuronmem_manifest_kernel_io_name(h, i, C.bool(io.out), j, &s)); err != nil {
						return err
					}
					*io.names = append(*io.names, goString(s))
				}
			}
			p.Kernels = append(p.Kernels, kern)
		}
		for i := C.size_t(0); i < c.num_custom_call_targets; i++ {
			var s C.neuronmem_string_t
			var n C.uint64_t
			if err := check(C.neuronmem_manifest_custom_call_target(h, i, &s, &n)); err != nil {
				return err
			}
			p.CustomCallTargets[goString(s)] = uint64(n)
		}
		for i := C.size_t(0); i < c.num_channels; i++ {
			var ch C.neuronmem_manifest_channel_t
			if err := check(C.nm_manifest_channel(h, i, &ch)); err != nil {
				return err
			}
			flat := int64s(ch.source_target_pairs, 2*ch.num_pairs)
			pairs := make([][2]int64, int(ch.num_pairs))
			for j := range pairs {
				pairs[j] = [2]int64{flat[2*j], flat[2*j+1]}
			}
			p.Channels = append(p.Channels, Channel{goString(ch.function), goString(ch.op), int64(ch.handle),
				int(ch._type), bool(ch.is_host_transfer), pairs, int(ch.num_payloads), int(ch.line), int(ch.column)})
		}
		for i := C.size_t(0); i < c.num_warnings; i++ {
			var s C.neuronmem_string_t
			if err := check(C.neuronmem_manifest_warning(h, i, &s)); err != nil {
				return err
			}
			p.Warnings = append(p.Warnings, goString(s))
		}
		for i := C.size_t(0); i < c.num_composites; i++ {
			var k C.neuronmem_manifest_composite_t
			if err := check(C.nm_manifest_composite(h, i, &k)); err != nil {
				return err
			}
			comp := Composite{Function: goString(k.function), Name: goString(k.name),
				Decomposition: goString(k.decomposition), Version: int64(k.version), Line: int(k.line),
				Column: int(k.column)}
			for j := C.size_t(0); j < k.num_attributes; j++ {
				var key, value C.neuronmem_string_t
				if err := check(C.neuronmem_manifest_composite_attribute(h, i, j, &key, &value)); err != nil {
					return err
				}
				comp.Attributes = append(comp.Attributes, [2]string{goString(key), goString(value)})
			}
			p.Composites = append(p.Composites, comp)
		}
		return nil
	})
	return p, err
}

func (m *Manifest) memoryFor(d *Device, index int, result bool) (*Memory, error) {
	var out *C.neuronmem_memory_t
	err := m.use(func(h *C.neuronmem_manifest_t) error {
		return d.client.use(func(*C.neuronmem_client_t) error {
			if result {
				return check(C.neuronmem_manifest_result_memory(h, d.h, C.size_t(index), &out))
			}
			return check(C.neuronmem_manifest_argument_memory(h, d.h, C.size_t(index), &out))
		})
	})
	if err != nil {
		return nil, err
	}
	return &Memory{d.client, out}, nil
}

// ArgumentMemory is the memory of d that argument index must be uploaded to.
func (m *Manifest) ArgumentMemory(d *Device, index int) (*Memory, error) {
	return m.memoryFor(d, index, false)
}

// ResultMemory is the memory of d that result index will live in.
func (m *Manifest) ResultMemory(d *Device, index int) (*Memory, error) {
	return m.memoryFor(d, index, true)
}

// UploadArgument is one argument's host data for UploadArguments: pinned-host memory (Host, from Offset;
// pinned_host arguments then upload zero-copy) or Go bytes (Bytes, copied to C memory for the call).
type UploadArgument struct {
	Host   *HostMemory
	Offset uint64
	Bytes  []byte
}

// UploadArguments is the upload plan: one buffer per argument in the memory the manifest names for d, in
// one batched submission with one event for all. Each argument's data must be exactly its dense size. Bytes
// are copied to C memory first; with a semantics other than ImmutableOnlyDuringCall each buffer keeps its
// host data (HostMemory or that copy) until it is closed and the library is done with it.
func (m *Manifest) UploadArguments(d *Device, args []UploadArgument, sem Semantics) ([]*Buffer, *Event, error) {
	vals, err := m.Arguments()
	if err != nil {
		return nil, nil, err
	}
	if len(args) != len(vals) {
		return nil, nil, invalid("UploadArguments: %d arguments given, the manifest has %d", len(args), len(vals))
	}
	// host_data is an array of pointers, so it lives in C memory (cgo: Go memory passed to C holds no Go pointer).
	cptrs := C.calloc(C.size_t(len(args)+1), C.size_t(unsafe.Sizeof(uintptr(0))))
	defer C.free(cptrs)
	ptrs := unsafe.Slice((*unsafe.Pointer)(cptrs), len(args))
	hosts := make([]*HostMemory, len(args))
	copies := make([]unsafe.Pointer, len(args)) // C copies of Bytes
	undo := func() {
		for i := range args {
			if hosts[i] != nil {
				hosts[i].release()
			}
			if copies[i] != nil {
				C.free(copies[i])
			}
		}
	}
	for i, a := range args {
		n, err := vals[i].Size()
		if err != nil {
			undo()
			return nil, nil, err
		}
		switch {
		case a.Host != nil:
			p, err := a.Host.acquire(a.Offset, n)
			if err != nil {
				undo()
				return nil, nil, err
			}
			hosts[i], ptrs[i] = a.Host, p
		case uint64(len(a.Bytes)) == n:
			if n > 0 {
				copies[i] = C.CBytes(a.Bytes)
				ptrs[i] = copies[i]
			}
		default:
			undo()
			return nil, nil, invalid("argument %d (%s): %d bytes given, %v%v needs %d", i, vals[i].Name,
				len(a.Bytes), vals[i].ElementName, vals[i].Dims, n)
		}
	}
	outs := make([]*C.neuronmem_buffer_t, len(args)+1)
	var ready *C.neuronmem_event_t
	err = m.use(func(h *C.neuronmem_manifest_t) error {
		return d.client.use(func(*C.neuronmem_client_t) error {
			return check(C.nm_upload_arguments(h, d.h, (*unsafe.Pointer)(cptrs), C.size_t(len(args)), C.int(sem),
				&outs[0], &ready))
		})
	})
	if err != nil {
		undo()
		return nil, nil, err
	}
	bufs := make([]*Buffer, len(args))
	for i := range args {
		if sem == ImmutableOnlyDuringCall { // the library copied during the call
			if hosts[i] != nil {
				hosts[i].release()
			}
			C.free(copies[i])
			bufs[i] = newBuffer(d.client, outs[i], nil, nil)
			continue
		}
		// The buffer may alias or still read the data: released after its ready event, when it is closed.
		var guard *C.neuronmem_event_t
		C.neuronmem_status_free(C.neuronmem_buffer_ready_event(outs[i], &guard))
		bufs[i] = newBuffer(d.client, outs[i], hosts[i], guard)
		bufs[i].owned = copies[i]
	}
	return bufs, newEvent(d.client, ready, nil), nil
}
