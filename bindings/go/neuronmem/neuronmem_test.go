package neuronmem

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

var dataDir = filepath.Join("..", "..", "..", "tests", "manifest", "data")

func newClient(t *testing.T, cores uint32) *Client {
	t.Helper()
	c, err := NewClient(&Options{NumCores: cores, DeviceBytesPerCore: 2 << 20, PinnedHostBytes: 32 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("closing the client: %v", err)
		}
	})
	return c
}

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func wantCode(t *testing.T, err error, code Code) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("want a %v *Error, got %v", code, err)
	}
	if e.Code != code || e.Message == "" {
		t.Fatalf("want %v, got %v", code, err)
	}
	if !errors.Is(err, &Error{Code: code}) {
		t.Fatalf("errors.Is does not match %v", code)
	}
}

func TestListingAndMemoryIDs(t *testing.T) {
	c := newClient(t, 3)
	if name := must[string](t)(c.PlatformName()); name != "neuron" {
		t.Fatalf("platform %q", name)
	}
	if v := must[string](t)(c.PlatformVersion()); !strings.Contains(v, VersionString()) {
		t.Fatalf("version %q", v)
	}
	if Version()>>8 != 0x0002 {
		t.Fatalf("version %x", Version())
	}
	if ext := must[[]string](t)(c.Extensions()); len(ext) != 0 {
		t.Fatalf("extensions %v", ext)
	}
	devs := must[[]*Device](t)(c.Devices())
	if len(devs) != 3 || len(must[[]*Memory](t)(c.Memories())) != 9 {
		t.Fatalf("%d devices", len(devs))
	}
	for d, dev := range devs {
		desc := must[DeviceDescription](t)(dev.Describe())
		if desc.ID != int32(d) || desc.Kind != "NC_v2" ||
			desc.String != "NC_v2 (NeuronCore(id="+itoa(d)+", process_index=0, local_id="+itoa(d)+"))" {
			t.Fatalf("%+v", desc)
		}
		def := must[*Memory](t)(dev.DefaultMemory())
		md := must[MemoryDescription](t)(def.Describe())
		if md.ID != int32(2*d) || md.Kind != KindDevice || md.DebugString != "NeuronMemory(id="+itoa(2*d)+", kind=device)" {
			t.Fatalf("%+v", md)
		}
		pinned := must[*Memory](t)(dev.MemoryOfKind(KindPinnedHost))
		unpinned := must[*Memory](t)(dev.MemoryOfKind(KindUnpinnedHost))
		if must[int32](t)(pinned.ID()) != int32(2*d+1) || must[int32](t)(unpinned.ID()) != int32(6+d) {
			t.Fatal("pinned/unpinned ids")
		}
		var ids []int32
		for _, m := range must[[]*Memory](t)(dev.AddressableMemories()) {
			ids = append(ids, must[int32](t)(m.ID()))
		}
		if !reflect.DeepEqual(ids, []int32{int32(2 * d), int32(2*d + 1), int32(6 + d)}) {
			t.Fatalf("addressable %v", ids)
		}
		if !must[*Device](t)(c.LookupDevice(int32(d))).Same(dev) {
			t.Fatal("lookup device")
		}
		if ad := must[[]*Device](t)(def.AddressableDevices()); len(ad) != 1 || !ad[0].Same(dev) {
			t.Fatal("addressable devices")
		}
		if !must[bool](t)(def.OwnedBy(c)) {
			t.Fatal("owner")
		}
	}
	if k := must[MemoryKind](t)(must[*Memory](t)(c.LookupMemory(3)).Kind()); k != KindPinnedHost {
		t.Fatalf("memory 3 is %v", k)
	}
	_, err := c.LookupMemory(9)
	wantCode(t, err, CodeNotFound)
	_, err = c.LookupDevice(3)
	wantCode(t, err, CodeNotFound)
	_, err = devs[0].MemoryOfKind(7)
	wantCode(t, err, CodeInvalidArgument)
	st := must[MemoryStats](t)(must[*Memory](t)(devs[0].DefaultMemory()).Stats())
	if st.Capacity != 2<<20 || st.LiveAllocations != 0 {
		t.Fatalf("%+v", st)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestHostMemory(t *testing.T) {
	c := newClient(t, 1)
	hm := must[*HostMemory](t)(c.HostAllocate(4096, 0))
	for i := range hm.Bytes() {
		hm.Bytes()[i] = 7
	}
	if !must[bool](t)(c.IsPinned(hm)) || must[bool](t)(c.IsPinnedBytes(make([]byte, 64))) {
		t.Fatal("is_pinned")
	}
	if err := c.Close(); CodeOf(err) != CodeFailedPrecondition {
		t.Fatalf("closing with live host memory: %v", err)
	}
	if err := hm.Free(); err != nil {
		t.Fatal(err)
	}
	if hm.Bytes() != nil || hm.Free() != nil {
		t.Fatal("after free")
	}
	_, err := c.HostAllocate(0, 0)
	wantCode(t, err, CodeInvalidArgument)
	_, err = c.HostAllocate(64, 3)
	wantCode(t, err, CodeInvalidArgument)
	_, err = c.HostAllocate(1<<40, 0)
	wantCode(t, err, CodeResourceExhausted)
}

func TestEventsCallbacksAndContexts(t *testing.T) {
	c := newClient(t, 1)
	ev := must[*Event](t)(c.NewEvent())
	defer ev.Close()
	if must[bool](t)(ev.IsReady()) {
		t.Fatal("ready before completion")
	}
	wantCode(t, ev.Err(), CodeFailedPrecondition)
	wantCode(t, ev.WaitTimeout(time.Millisecond), CodeDeadlineExceeded)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	wantCode(t, ev.Wait(ctx), CodeDeadlineExceeded)
	cancel()
	ctx, cancel = context.WithCancel(context.Background())
	go func() { time.Sleep(5 * time.Millisecond); cancel() }()
	wantCode(t, ev.Wait(ctx), CodeCancelled)

	var wg sync.WaitGroup
	wg.Add(1)
	var got error = &Error{}
	if err := ev.OnReady(func(err error) { got = err; wg.Done() }); err != nil {
		t.Fatal(err)
	}
	go func() { _ = ev.Complete(nil) }() // completed from another goroutine
	wg.Wait()
	if got != nil {
		t.Fatalf("callback error %v", got)
	}
	if err := ev.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantCode(t, ev.Complete(nil), CodeFailedPrecondition)
	ran := false
	if err := ev.OnReady(func(error) { ran = true }); err != nil || !ran {
		t.Fatal("a callback on a ready event runs at once")
	}

	// Completed with an error: the dependent transfer fails with its code.
	_, lookupErr := c.LookupMemory(99)
	gate := must[*Event](t)(c.NewEvent())
	defer gate.Close()
	mem := must[*Memory](t)(must[*Device](t)(c.LookupDevice(0)).DefaultMemory())
	buf := must[*Buffer](t)(FromSlice(mem, []int64{4}, []int32{1, 2, 3, 4}))
	defer buf.Close()
	hm := must[*HostMemory](t)(c.HostAllocate(16, 0))
	w := must[*Event](t)(buf.WriteAsync(hm, 0, 16, 0, gate))
	wantCode(t, hm.Free(), CodeFailedPrecondition) // a transfer in flight holds it
	if err := gate.Complete(lookupErr); err != nil {
		t.Fatal(err)
	}
	wantCode(t, w.Wait(context.Background()), CodeNotFound)
	w.Close()
	if err := hm.Free(); err != nil {
		t.Fatal(err)
	}
	wantCode(t, must[*Event](t)(c.NewEvent()).Complete(errors.New("plain")), CodeInvalidArgument)
	made := must[*Event](t)(c.NewEvent()) // an *Error the caller made gets a status of its own
	defer made.Close()
	if err := made.Complete(&Error{Code: CodeAborted, Message: "made here"}); err != nil {
		t.Fatal(err)
	}
	wantCode(t, made.Err(), CodeAborted)
	if !strings.Contains(made.Err().Error(), "made here") {
		t.Fatal(made.Err())
	}
}

func TestRoundTripAcrossCores(t *testing.T) {
	c := newClient(t, 3)
	devs := must[[]*Device](t)(c.Devices())
	dev0 := must[*Memory](t)(devs[0].DefaultMemory())
	dev1 := must[*Memory](t)(devs[1].DefaultMemory())
	values := []int32{1, -2, 3, -4, 5, -6}
	buf := must[*Buffer](t)(FromSlice(dev0, []int64{2, 3}, values))
	defer buf.Close()
	if d := must[[]int64](t)(buf.Dims()); !reflect.DeepEqual(d, []int64{2, 3}) {
		t.Fatal(d)
	}
	if et := must[ElementType](t)(buf.ElementType()); et != S32 || must[uint64](t)(buf.Size()) != 24 {
		t.Fatal(et)
	}
	if !must[*Memory](t)(buf.Memory()).Same(dev0) || !must[*Device](t)(buf.Device()).Same(devs[0]) {
		t.Fatal("placement")
	}
	up := must[*Event](t)(buf.ReadyEvent())
	defer up.Close()
	moved := must[*Buffer](t)(buf.CopyTo(dev1, up))
	defer moved.Close()
	if !must[*Device](t)(moved.Device()).Same(devs[1]) {
		t.Fatal("copy placement")
	}
	if got := must[[]int32](t)(ToSlice[int32](moved)); !reflect.DeepEqual(got, values) {
		t.Fatal(got)
	}
	part := make([]byte, 8)
	if err := moved.Read(part, 4); err != nil || int32(binary.LittleEndian.Uint32(part)) != -2 {
		t.Fatal(err, part)
	}
}

func TestEveryKindToEveryKind(t *testing.T) {
	c := newClient(t, 3)
	devs := must[[]*Device](t)(c.Devices())
	data := make([]float32, 300)
	for i := range data {
		data[i] = float32(i)/150 - 1
	}
	for _, from := range []MemoryKind{KindDevice, KindPinnedHost, KindUnpinnedHost} {
		for _, to := range []MemoryKind{KindDevice, KindPinnedHost, KindUnpinnedHost} {
			src := must[*Memory](t)(devs[0].MemoryOfKind(from))
			dst := must[*Memory](t)(devs[2].MemoryOfKind(to))
			a := must[*Buffer](t)(FromSlice(src, []int64{10, 30}, data))
			b := must[*Buffer](t)(a.CopyTo(dst))
			if k := must[MemoryKind](t)(must[*Memory](t)(b.Memory()).Kind()); k != to {
				t.Fatalf("%v -> %v landed in %v", from, to, k)
			}
			if got := must[[]float32](t)(ToSlice[float32](b)); !reflect.DeepEqual(got, data) {
				t.Fatalf("%v -> %v", from, to)
			}
			a.Close()
			b.Close()
		}
	}
}

func TestWriteChunksFileLoadAndBatch(t *testing.T) {
	c := newClient(t, 2)
	mem := must[*Memory](t)(must[*Device](t)(c.LookupDevice(1)).DefaultMemory())
	b := must[*Buffer](t)(mem.Allocate(S32, []int64{4, 4}))
	defer b.Close()
	for row := 0; row < 4; row++ {
		chunk := make([]byte, 16)
		for i := 0; i < 4; i++ {
			binary.LittleEndian.PutUint32(chunk[4*i:], uint32(row))
		}
		if err := b.UploadChunk(chunk, uint64(16*row), row == 3); err != nil {
			t.Fatal(err)
		}
	}
	wantCode(t, b.UploadChunk(make([]byte, 4), 0, false), CodeFailedPrecondition)
	if err := b.Write([]byte{9, 0, 0, 0, 9, 0, 0, 0}, 8); err != nil {
		t.Fatal(err)
	}
	got := must[[]int32](t)(ToSlice[int32](b))
	if !reflect.DeepEqual(got[:8], []int32{0, 0, 9, 9, 1, 1, 1, 1}) {
		t.Fatal(got)
	}
	wantCode(t, b.Write(make([]byte, 8), 60), CodeOutOfRange)

	path := filepath.Join(t.TempDir(), "weights.bin")
	raw := make([]byte, 128)
	for i := range raw {
		raw[i] = byte(i)
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	f := must[*Buffer](t)(mem.Allocate(U8, []int64{32}))
	defer f.Close()
	if err := f.LoadFile(path, 16, 32, 0); err != nil {
		t.Fatal(err)
	}
	ev := must[*Event](t)(f.LoadFileAsync(path, 0, 8, 24))
	if err := ev.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	ev.Close()
	out := make([]byte, 32)
	if err := f.ReadAll(out); err != nil || !bytes.Equal(out[:24], raw[16:40]) || !bytes.Equal(out[24:], raw[:8]) {
		t.Fatal(err, out)
	}
	wantCode(t, f.LoadFile(path+".missing", 0, 8, 0), CodeNotFound)
	wantCode(t, f.LoadFile(path, 120, 16, 0), CodeOutOfRange)

	// Async read into pinned-host memory.
	hm := must[*HostMemory](t)(c.HostAllocate(64, 0))
	rd := must[*Event](t)(f.ReadAsync(hm, 0, 0, 32))
	if err := rd.Wait(context.Background()); err != nil || !bytes.Equal(hm.Bytes()[:32], out) {
		t.Fatal(err)
	}
	rd.Close()
	if err := hm.Free(); err != nil {
		t.Fatal(err)
	}

	devs := must[[]*Device](t)(c.Devices())
	var entries []BatchEntry
	for i, d := range devs {
		entries = append(entries, BatchEntry{must[*Memory](t)(d.DefaultMemory()), U8, []int64{int64(i + 1)},
			bytes.Repeat([]byte{byte(i + 1)}, i+1)})
	}
	bufs, ready := must2(t)(c.UploadBatch(entries))
	if err := ready.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	ready.Close()
	for i, bb := range bufs {
		if got := must[[]uint8](t)(ToSlice[uint8](bb)); !bytes.Equal(got, entries[i].Data) {
			t.Fatal(i, got)
		}
		bb.Close()
	}
}

func must2(t *testing.T) func([]*Buffer, *Event, error) ([]*Buffer, *Event) {
	return func(b []*Buffer, e *Event, err error) ([]*Buffer, *Event) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return b, e
	}
}

func TestZeroCopyFromThePinnedArena(t *testing.T) {
	c := newClient(t, 1)
	dev := must[*Device](t)(c.LookupDevice(0))
	pinned := must[*Memory](t)(dev.MemoryOfKind(KindPinnedHost))
	hm := must[*HostMemory](t)(c.HostAllocate(8*16*4, 0))
	for i := 0; i < 128; i++ {
		binary.LittleEndian.PutUint32(hm.Bytes()[4*i:], uint32(i))
	}
	b := must[*Buffer](t)(pinned.FromHost(hm, 0, S32, []int64{8, 16}, MutableZeroCopy))
	if !must[bool](t)(b.IsZeroCopy()) {
		t.Fatal("not zero-copy")
	}
	binary.LittleEndian.PutUint32(hm.Bytes(), 1000) // the buffer is the memory
	if got := must[[]int32](t)(ToSlice[int32](b)); got[0] != 1000 || got[5] != 5 {
		t.Fatal(got[:6])
	}
	wantCode(t, hm.Free(), CodeFailedPrecondition) // the buffer aliases it
	_, err := pinned.FromHost(hm, 256, S32, []int64{8, 16}, ImmutableZeroCopy)
	wantCode(t, err, CodeInvalidArgument) // past the allocation
	b.Close()
	if err := hm.Free(); err != nil {
		t.Fatal(err)
	}
}

func TestMisuseIsAnErrorValue(t *testing.T) {
	c, err := NewClient(&Options{NumCores: 2, DeviceBytesPerCore: 2 << 20, PinnedHostBytes: 32 << 20})
	if err != nil {
		t.Fatal(err)
	}
	mem := must[*Memory](t)(must[*Device](t)(c.LookupDevice(0)).DefaultMemory())
	buf := must[*Buffer](t)(FromSlice(mem, []int64{6}, []int32{0, 1, 2, 3, 4, 5}))
	// A too-small output slice.
	wantCode(t, buf.ReadAll(make([]byte, 8)), CodeInvalidArgument)
	wantCode(t, ReadInto(buf, make([]int32, 2)), CodeInvalidArgument)
	wantCode(t, ReadInto(buf, make([]float32, 6)), CodeInvalidArgument) // the wrong type
	wantCode(t, buf.Read(make([]byte, 8), 20), CodeOutOfRange)
	// A negative dimension, and data of the wrong size.
	_, err = mem.Allocate(F32, []int64{-1, 3})
	wantCode(t, err, CodeInvalidArgument)
	_, err = FromSlice(mem, []int64{-2}, []float32{1, 2})
	wantCode(t, err, CodeInvalidArgument)
	_, err = FromSlice(mem, []int64{3}, []float32{1, 2})
	wantCode(t, err, CodeInvalidArgument)
	// A memory and an event of another client.
	other := must[*Client](t)(NewClient(&Options{NumCores: 1, DeviceBytesPerCore: 1 << 20}))
	otherMem := must[*Memory](t)(must[*Device](t)(other.LookupDevice(0)).DefaultMemory())
	_, err = buf.CopyTo(otherMem)
	wantCode(t, err, CodeInvalidArgument)
	foreign := must[*Event](t)(other.NewEvent())
	wantCode(t, buf.Write(make([]byte, 4), 0, foreign), CodeInvalidArgument)
	foreign.Close()
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	// The client refuses to close while a buffer lives, and stays usable.
	wantCode(t, c.Close(), CodeFailedPrecondition)
	if got := must[[]int32](t)(ToSlice[int32](buf)); got[5] != 5 {
		t.Fatal(got)
	}
	if err := buf.Delete(); err != nil || !must[bool](t)(buf.IsDeleted()) {
		t.Fatal(err)
	}
	_, err = ToSlice[int32](buf)
	wantCode(t, err, CodeFailedPrecondition)
	// Use after close.
	buf.Close()
	buf.Close()
	_, err = buf.Dims()
	wantCode(t, err, CodeFailedPrecondition)
	wantCode(t, buf.Write(nil, 0), CodeFailedPrecondition)
	ev := must[*Event](t)(c.NewEvent())
	ev.Close()
	wantCode(t, ev.Wait(context.Background()), CodeFailedPrecondition)
	b2 := must[*Buffer](t)(mem.Allocate(F32, []int64{2}))
	wantCode(t, b2.Write(make([]byte, 4), 0, ev), CodeFailedPrecondition) // a closed event as a wait
	wantCode(t, c.Close(), CodeFailedPrecondition)
	b2.Close()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestMisuseAfterClientClose(t *testing.T) {
	c := must[*Client](t)(NewClient(&Options{NumCores: 1, DeviceBytesPerCore: 1 << 20}))
	dev := must[*Device](t)(c.LookupDevice(0))
	mem := must[*Memory](t)(dev.DefaultMemory())
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal("closing twice", err)
	}
	_, err := c.Devices()
	wantCode(t, err, CodeFailedPrecondition)
	_, err = mem.Describe()
	wantCode(t, err, CodeFailedPrecondition)
	_, err = FromSlice(mem, []int64{1}, []float32{1})
	wantCode(t, err, CodeFailedPrecondition)
	_, err = dev.DefaultMemory()
	wantCode(t, err, CodeFailedPrecondition)
	_, err = c.HostAllocate(64, 0)
	wantCode(t, err, CodeFailedPrecondition)
}

func TestManifest(t *testing.T) {
	m := must[*Manifest](t)(LoadManifestFile(filepath.Join(dataDir, "decode_step.mlir"), nil))
	defer m.Close()
	mod, entry, err := m.Entry()
	if err != nil || mod != "jit_decode_step" || entry != "main" {
		t.Fatal(mod, entry, err)
	}
	counts := must[ManifestCounts](t)(m.Counts())
	if counts.Arguments != 4 || counts.Results != 3 || counts.Moves != 3 || counts.HostCompute != 1 ||
		counts.Kernels != 1 || counts.Channels != 2 {
		t.Fatalf("%+v", counts)
	}
	args := must[[]Value](t)(m.Arguments())
	var kinds []MemoryKind
	for _, a := range args {
		kinds = append(kinds, a.MemoryKind)
	}
	if !reflect.DeepEqual(kinds, []MemoryKind{KindPinnedHost, KindPinnedHost, KindDevice, KindDevice}) {
		t.Fatal(kinds)
	}
	if a := args[0]; a.Name != "arg0" || a.ElementType != S32 || !reflect.DeepEqual(a.Dims, []int64{8, 16}) ||
		a.Attributes["mhlo.sharding"] != "{replicated}" {
		t.Fatalf("%+v", a)
	}
	if a := args[2]; !a.BufferDonor || a.AliasingOutput != 0 || a.ElementType != BF16 {
		t.Fatalf("%+v", a)
	}
	res := must[[]Value](t)(m.Results())
	if res[0].Name != "hidden" || res[1].MemoryKind != KindPinnedHost || res[2].MemoryKind != KindDevice {
		t.Fatalf("%+v", res)
	}
	p := must[Parts](t)(m.Parts())
	if len(p.Moves) != 3 || p.Kernels[0].FuncName != "nki_tensor_add" ||
		!reflect.DeepEqual(p.Kernels[0].InputNames, []string{"a_input", "b_input"}) ||
		!reflect.DeepEqual(p.Kernels[0].Grid, []int64{2, 1}) || p.HostCompute[0].Function != "main" ||
		!reflect.DeepEqual(p.Channels[0].SourceTargetPairs, [][2]int64{{0, 1}, {1, 0}}) ||
		p.CustomCallTargets["my-target.v2"] != 1 || len(p.Warnings) != 0 {
		t.Fatalf("%+v", p)
	}
	js := must[string](t)(m.JSON())
	again := must[*Manifest](t)(LoadManifestJSON(js))
	if must[string](t)(again.JSON()) != js {
		t.Fatal("json round trip")
	}
	again.Close()

	two, err := os.ReadFile(filepath.Join(dataDir, "two_entries.mlir"))
	if err != nil {
		t.Fatal(err)
	}
	if names := must[[]string](t)(ListEntries(string(two), "")); !reflect.DeepEqual(names, []string{"prefill", "decode"}) {
		t.Fatal(names)
	}
	dm := must[*Manifest](t)(LoadManifestText(string(two), &ManifestOptions{Entry: "decode"}))
	if r := must[[]Value](t)(dm.Results()); r[0].MemoryKind != KindUnpinnedHost {
		t.Fatal(r)
	}
	dm.Close()
	_, err = LoadManifestText(string(two), nil)
	wantCode(t, err, CodeNotFound)
	_, err = LoadManifestFile(filepath.Join(dataDir, "bad_kind.mlir"), nil)
	wantCode(t, err, CodeInvalidArgument)
	if !regexp.MustCompile(`bad_kind\.mlir:\d+:\d+: `).MatchString(err.Error()) {
		t.Fatal(err)
	}
	_, err = ListEntries("func.func @f(", "x.mlir")
	wantCode(t, err, CodeInvalidArgument)
	_, err = LoadManifestJSON("{}")
	wantCode(t, err, CodeInvalidArgument)
}

// Text -> WriteArtifact -> an artifact that loads into the same manifest; the target names the producer; a
// target out of range and a chlo op are refused (neuronmem_manifest_write_artifact).
func TestWriteArtifact(t *testing.T) {
	text := "func.func @main(%arg0: tensor<4xf32> {mhlo.memory_kind = \"pinned_host\"}) -> tensor<4xf32> {\n" +
		"  %0 = stablehlo.exponential %arg0 : tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n"
	want := must[string](t)(must[*Manifest](t)(LoadManifestText(text, &ManifestOptions{Filename: "e.mlir"})).JSON())
	for _, c := range []struct{ target, producer string }{{"", "StableHLO_v"}, {"1.0.0", "StableHLO_v1.0.0\x00"}} {
		data := must[[]byte](t)(WriteArtifact(text, c.target, "e.mlir"))
		if !bytes.HasPrefix(data, []byte("ML\xefR")) || !bytes.Contains(data[:40], []byte(c.producer)) {
			t.Fatalf("target %q: %q", c.target, data[:40])
		}
		m := must[*Manifest](t)(LoadManifestText(string(data), &ManifestOptions{Filename: "e.mlir"}))
		if got := must[string](t)(m.JSON()); got != want {
			t.Fatalf("target %q: the artifact's manifest differs:\n%s\n%s", c.target, got, want)
		}
		m.Close()
	}
	old := must[[]byte](t)(WriteArtifact(text, "1.0.0", ""))
	if !bytes.Contains(old, []byte("exponential_v1\x00")) {
		t.Fatal("a 1.0.0 artifact holds exponential_v1")
	}
	_, err := WriteArtifact(text, "9.0.0", "")
	wantCode(t, err, CodeInvalidArgument)
	_, err = WriteArtifact(strings.Replace(text, "stablehlo.exponential %arg0 : tensor<4xf32>",
		"chlo.erf %arg0 : tensor<4xf32> -> tensor<4xf32>", 1), "", "erf.mlir")
	wantCode(t, err, CodeInvalidArgument)
	if !strings.Contains(err.Error(), "chlo.erf") {
		t.Fatal(err)
	}
	_, err = WriteArtifact("func.func @f(", "", "x.mlir")
	wantCode(t, err, CodeInvalidArgument)
}

// The composites of a manifest with their name, decomposition, version and composite_attributes (issue 26).
func TestManifestComposites(t *testing.T) {
	m := must[*Manifest](t)(LoadManifestFile(filepath.Join(dataDir, "composites.mlir"), nil))
	defer m.Close()
	if c := must[ManifestCounts](t)(m.Counts()); c.Composites != 2 {
		t.Fatalf("%+v", c)
	}
	p := must[Parts](t)(m.Parts())
	want := []Composite{
		{Function: "main", Name: "my.scale_shift", Decomposition: "my.scale_shift", Version: 3,
			Attributes: [][2]string{{"scale", "2.000000e+00 : f32"}, {"tag", "fast"}}, Line: 5, Column: 5},
		{Function: "main", Name: "ns.add", Decomposition: "add_impl", Line: 6, Column: 5},
	}
	if !reflect.DeepEqual(p.Composites, want) {
		t.Fatalf("%+v", p.Composites)
	}
	plain := must[*Manifest](t)(LoadManifestText("func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"+
		"  return %a : tensor<2xf32>\n}\n", nil))
	defer plain.Close()
	if p := must[Parts](t)(plain.Parts()); len(p.Composites) != 0 {
		t.Fatalf("%+v", p.Composites)
	}
}

func TestPlacementAndUploadPlan(t *testing.T) {
	m := must[*Manifest](t)(LoadManifestFile(filepath.Join(dataDir, "decode_step.mlir"), nil))
	c := must[*Client](t)(NewClient(&Options{NumCores: 2, DeviceBytesPerCore: 4 << 20, PinnedHostBytes: 32 << 20}))
	dev := must[*Device](t)(c.LookupDevice(1))
	for i, want := range []int32{3, 3, 2, 2} {
		if id := must[int32](t)(must[*Memory](t)(m.ArgumentMemory(dev, i)).ID()); id != want {
			t.Fatalf("argument %d in %d", i, id)
		}
	}
	for i, want := range []int32{2, 3, 2} {
		if id := must[int32](t)(must[*Memory](t)(m.ResultMemory(dev, i)).ID()); id != want {
			t.Fatalf("result %d in %d", i, id)
		}
	}
	_, err := m.ArgumentMemory(dev, 9)
	wantCode(t, err, CodeOutOfRange)
	args := must[[]Value](t)(m.Arguments())
	var ups []UploadArgument
	var hosts []*HostMemory
	var want [][]byte
	for i, a := range args {
		n := must[uint64](t)(a.Size())
		data := make([]byte, n)
		for j := range data {
			data[j] = byte(j%97 + i)
		}
		want = append(want, data)
		if a.MemoryKind == KindPinnedHost {
			hm := must[*HostMemory](t)(c.HostAllocate(n, 0))
			copy(hm.Bytes(), data)
			hosts = append(hosts, hm)
			ups = append(ups, UploadArgument{Host: hm})
		} else {
			ups = append(ups, UploadArgument{Bytes: data})
		}
	}
	bad := append([]UploadArgument{{Bytes: make([]byte, 3)}}, ups[1:]...)
	_, _, err = m.UploadArguments(dev, bad, ImmutableZeroCopy)
	wantCode(t, err, CodeInvalidArgument)
	_, _, err = m.UploadArguments(dev, ups[:3], ImmutableZeroCopy)
	wantCode(t, err, CodeInvalidArgument)
	bufs, ready := must2(t)(m.UploadArguments(dev, ups, ImmutableZeroCopy))
	if err := ready.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	ready.Close()
	for i, b := range bufs {
		if !must[*Memory](t)(b.Memory()).Same(must[*Memory](t)(m.ArgumentMemory(dev, i))) {
			t.Fatalf("argument %d misplaced", i)
		}
		if zc := must[bool](t)(b.IsZeroCopy()); zc != (i < 2) {
			t.Fatalf("argument %d zero-copy %v", i, zc)
		}
		out := make([]byte, len(want[i]))
		if err := b.ReadAll(out); err != nil || !bytes.Equal(out, want[i]) {
			t.Fatalf("argument %d: %v", i, err)
		}
	}
	wantCode(t, hosts[0].Free(), CodeFailedPrecondition)
	for _, b := range bufs {
		b.Close()
	}
	for _, hm := range hosts {
		if err := hm.Free(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	m.Close()
	_, err = m.Counts()
	wantCode(t, err, CodeFailedPrecondition)
}

// A client of one process is process 0 of 1; DescribeDeviceID describes its devices by global id; the
// directory store round-trips a value and times out naming an absent key.
func TestJobTopologyAndDirectoryStore(t *testing.T) {
	c := newClient(t, 2)
	index, n, err := c.Process()
	if err != nil || index != 0 || n != 1 {
		t.Fatalf("process %d of %d (%v)", index, n, err)
	}
	desc := must[DeviceDescription](t)(c.DescribeDeviceID(1))
	if desc.ID != 1 || desc.ProcessIndex != 0 || desc.LocalID != 1 ||
		desc.DebugString != "NeuronCore(id=1, process_index=0, local_id=1)" {
		t.Fatalf("%+v", desc)
	}
	if _, err := c.DescribeDeviceID(2); err == nil || CodeOf(err) != CodeNotFound {
		t.Fatalf("device 2: %v", err)
	}
	dir := t.TempDir()
	if err := DirectoryStorePut(dir, "job/ep/0", []byte("address")); err != nil {
		t.Fatal(err)
	}
	if v := must[[]byte](t)(DirectoryStoreGet(dir, "job/ep/0", time.Second)); string(v) != "address" {
		t.Fatalf("%q", v)
	}
	_, err = DirectoryStoreGet(dir, "job/ep/1", time.Millisecond)
	if err == nil || CodeOf(err) != CodeDeadlineExceeded || !strings.Contains(err.Error(), "job/ep/1") {
		t.Fatalf("absent key: %v", err)
	}
}
