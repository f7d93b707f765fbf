package neuronmem

import (
	"context"
	"math"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"
)

const execText = `func.func @main(%w: tensor<4xf32> {mhlo.memory_kind = "pinned_host"}, %x: tensor<4xf32>)
    -> (tensor<4xf32>, tensor<4xf32> {mhlo.memory_kind = "pinned_host"}) {
  %0 = stablehlo.multiply %w, %x : tensor<4xf32>
  %1 = stablehlo.custom_call @MoveToHost(%0) {backend_config = ""} : (tensor<4xf32>) -> tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}
`

// executeAndWait executes exe on dev and waits for it: the results, the execution and the execution's error.
// The results, the done event and the execution are closed when the test ends.
func executeAndWait(t *testing.T, exe *Executable, dev *Device, args []*Buffer) ([]*Buffer, *Execution, error) {
	t.Helper()
	results, done, run, err := exe.Execute(dev, args, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, r := range results {
			r.Close()
		}
		run.Close()
		done.Close()
	})
	return results, run, done.Wait(context.Background())
}

// A shape-polymorphic entry (jax.export's symbolic dimension b) runs a specialization per argument shape; the
// properties count them (issue 26).
const polyText = `module @jit_f attributes {jax.uses_shape_polymorphism = true} {
  func.func public @main(%arg0: tensor<?x2xf32>) -> tensor<?x2xf32> {
    %0 = stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<?x2xf32>) -> tensor<i32>
    %1 = stablehlo.convert %0 : (tensor<i32>) -> tensor<i64>
    %2 = call @_wrapped_jax_export_main(%1, %arg0) : (tensor<i64>, tensor<?x2xf32>) -> tensor<?x2xf32>
    return %2 : tensor<?x2xf32>
  }
  func.func private @_wrapped_jax_export_main(%arg0: tensor<i64> {jax.global_constant = "b"},
      %arg1: tensor<?x2xf32>) -> tensor<?x2xf32> {
    %0 = stablehlo.add %arg1, %arg1 : tensor<?x2xf32>
    return %0 : tensor<?x2xf32>
  }
}
`

func TestShapePolymorphicExecutable(t *testing.T) {
	c := newClient(t, 1)
	dev := must[*Device](t)(c.LookupDevice(0))
	exe := must[*Executable](t)(c.Compile(polyText, &CompileOptions{Filename: "poly.mlir"}))
	defer exe.Close()
	if p := must[[]ExecutableValue](t)(exe.Parameters()); !reflect.DeepEqual(p[0].Dims, []int64{-1, 2}) {
		t.Fatalf("%+v", p)
	}
	mem := must[*Memory](t)(exe.ParameterMemory(dev, 0))
	for _, b := range []int64{1, 3, 1} {
		data := make([]float32, 2*b)
		want := make([]float32, 2*b)
		for i := range data {
			data[i] = float32(i)
			want[i] = 2 * float32(i)
		}
		x := must[*Buffer](t)(FromSlice(mem, []int64{b, 2}, data))
		defer x.Close()
		results, _, err := executeAndWait(t, exe, dev, []*Buffer{x})
		if err != nil {
			t.Fatal(err)
		}
		if got := must[[]float32](t)(ToSlice[float32](results[0])); !reflect.DeepEqual(got, want) {
			t.Fatal(b, got)
		}
	}
	if p := must[ExecutableProperties](t)(exe.Properties()); p.NumSpecializations != 2 {
		t.Fatalf("%+v", p)
	}
}

func TestExecutable(t *testing.T) {
	c := newClient(t, 2)
	dev := must[*Device](t)(c.LookupDevice(1))
	exe := must[*Executable](t)(c.Compile(execText, &CompileOptions{Filename: "go.mlir"}))
	p := must[ExecutableProperties](t)(exe.Properties())
	if p.NumParameters != 2 || p.NumOutputs != 2 || p.NumReplicas != 2 || p.NumExplicitMoves != 1 {
		t.Fatalf("%+v", p)
	}
	params := must[[]ExecutableValue](t)(exe.Parameters())
	outs := must[[]ExecutableValue](t)(exe.Outputs())
	if params[0].MemoryKind != KindPinnedHost || params[1].MemoryKind != KindDevice ||
		outs[1].MemoryKind != KindPinnedHost || !reflect.DeepEqual(outs[1].Dims, []int64{4}) || outs[1].Bytes != 16 {
		t.Fatalf("%+v %+v", params, outs)
	}
	wMem := must[*Memory](t)(exe.ParameterMemory(dev, 0))
	xMem := must[*Memory](t)(exe.ParameterMemory(dev, 1))
	if must[int32](t)(wMem.ID()) != 3 || must[int32](t)(must[*Memory](t)(exe.OutputMemory(dev, 0)).ID()) != 2 {
		t.Fatal("parameter / output memories")
	}
	w := must[*Buffer](t)(FromSlice(wMem, []int64{4}, []float32{1, 2, 3, 4}))
	defer w.Close()
	x := must[*Buffer](t)(FromSlice(xMem, []int64{4}, []float32{2, 2, 2, 2}))
	defer x.Close()
	results, run, err := executeAndWait(t, exe, dev, []*Buffer{w, x})
	if err != nil {
		t.Fatal(err)
	}
	if got := must[[]float32](t)(ToSlice[float32](results[1])); !reflect.DeepEqual(got, []float32{2, 4, 6, 8}) {
		t.Fatal(got)
	}
	if k := must[MemoryKind](t)(must[*Memory](t)(results[1].Memory()).Kind()); k != KindPinnedHost {
		t.Fatal(k)
	}
	st := must[ExecutionStats](t)(run.Stats())
	if st.ExplicitTransfers != 1 || st.ExplicitBytes != 16 || st.ImplicitTransfers != 0 {
		t.Fatalf("%+v", st)
	}
	tc := must[TransferCounts](t)(run.Transfers(KindDevice, KindPinnedHost))
	if tc.ExplicitTransfers != 1 || tc.ImplicitTransfers != 0 {
		t.Fatalf("%+v", tc)
	}
	_, err = run.Transfers(7, KindDevice)
	wantCode(t, err, CodeInvalidArgument)
	// Strict placement, a wrong argument count, a closed argument.
	misplaced := must[*Buffer](t)(FromSlice(must[*Memory](t)(dev.DefaultMemory()), []int64{4}, []float32{1, 1, 1, 1}))
	_, _, _, err = exe.Execute(dev, []*Buffer{misplaced, x}, nil, nil)
	wantCode(t, err, CodeFailedPrecondition)
	_, _, _, err = exe.Execute(dev, []*Buffer{x}, nil, nil)
	wantCode(t, err, CodeInvalidArgument)
	misplaced.Close()
	_, _, _, err = exe.Execute(dev, []*Buffer{misplaced, x}, nil, nil)
	wantCode(t, err, CodeFailedPrecondition)
	exe.Close()
	_, err = exe.Properties()
	wantCode(t, err, CodeFailedPrecondition)

	_, err = c.Compile("func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"+
		"  %0 = stablehlo.custom_call @nope(%a) : (tensor<2xf32>) -> tensor<2xf32>\n  return %0 : tensor<2xf32>\n}\n",
		&CompileOptions{Filename: "bad.mlir"})
	wantCode(t, err, CodeUnimplemented)
	if !strings.Contains(err.Error(), "bad.mlir:") {
		t.Fatal(err)
	}
	m := must[*Manifest](t)(LoadManifestText(execText, nil))
	defer m.Close()
	fromManifest := must[*Executable](t)(c.CompileManifest(m, nil))
	if ps := must[[]ExecutableValue](t)(fromManifest.Parameters()); len(ps) != 2 {
		t.Fatal(ps)
	}
	fromManifest.Close()
}

const spmdText = `module @jit_f attributes {mhlo.num_partitions = 2 : i32} {
  func.func public @main(%a: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.add %a, %a : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
`

// LaunchOptions' launch id and timeout reach the C struct ExecuteDevices submits (the library reads launch_id
// only when struct_size holds it); a single process cannot observe a launch id otherwise.
func TestLaunchIDReachesTheCArguments(t *testing.T) {
	full := launchArgs(&LaunchOptions{})
	for _, id := range []uint64{0, 7, math.MaxUint64} {
		a := launchArgs(&LaunchOptions{LaunchID: id, Timeout: 5 * time.Nanosecond})
		if uint64(a.launch_id) != id || uint64(a.timeout_ns) != 5 || a.struct_size != full.struct_size {
			t.Fatalf("%d: %+v", id, a)
		}
		if uintptr(a.struct_size) != unsafe.Sizeof(a) || a.devices != nil || a.executable != nil {
			t.Fatalf("%d: struct_size %d of %d, %+v", id, a.struct_size, unsafe.Sizeof(a), a)
		}
	}
}

func TestExecuteDevices(t *testing.T) {
	c := newClient(t, 2)
	devs := must[[]*Device](t)(c.Devices())
	exe := must[*Executable](t)(c.Compile(spmdText, nil))
	defer exe.Close()
	p := must[ExecutableProperties](t)(exe.Properties())
	if p.NumReplicas != 1 || p.NumPartitions != 2 {
		t.Fatalf("%+v", p)
	}
	for d, dev := range devs {
		r, part, err := exe.LogicalIDs(dev)
		if err != nil || r != 0 || part != uint32(d) {
			t.Fatalf("device %d: %d %d %v", d, r, part, err)
		}
	}
	args := make([][]*Buffer, 2)
	for d, dev := range devs {
		v := float32(d + 1)
		args[d] = []*Buffer{must[*Buffer](t)(FromSlice(must[*Memory](t)(dev.DefaultMemory()), []int64{4},
			[]float32{v, v, v, v}))}
		defer args[d][0].Close()
	}
	gate := must[*Event](t)(c.NewEvent())
	defer gate.Close()
	results, done, runs, err := exe.ExecuteDevices(devs, args, &LaunchOptions{Waits: [][]*Event{{gate}, nil}})
	if err != nil {
		t.Fatal(err)
	}
	if err := done[1].Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ready := must[bool](t)(done[0].IsReady()); ready {
		t.Fatal("device 0 ran before its wait event")
	}
	if err := gate.Complete(nil); err != nil {
		t.Fatal(err)
	}
	for d := range devs {
		if err := done[d].Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		want := float32(2 * (d + 1))
		if got := must[[]float32](t)(ToSlice[float32](results[d][0])); !reflect.DeepEqual(got,
			[]float32{want, want, want, want}) {
			t.Fatal(d, got)
		}
		st := must[ExecutionStats](t)(runs[d].Stats())
		tc := must[TransferCounts](t)(runs[d].Transfers(KindDevice, KindDevice))
		if st.PeerTransfers != 0 || st.PeerBytes != 0 || st.ImplicitTransfers != 0 || tc.PeerBytes != 0 {
			t.Fatalf("%+v %+v", st, tc)
		}
		results[d][0].Close()
		done[d].Close()
		runs[d].Close()
	}
	// A launch id (for a launch across the processes of a job) is accepted by a client of one process.
	results, done, runs, err = exe.ExecuteDevices(devs, args, &LaunchOptions{LaunchID: 42})
	if err != nil {
		t.Fatal(err)
	}
	for d := range devs {
		if err := done[d].Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		results[d][0].Close()
		done[d].Close()
		runs[d].Close()
	}
	// A device listed twice: nothing is submitted.
	_, _, _, err = exe.ExecuteDevices([]*Device{devs[0], devs[0]}, [][]*Buffer{args[0], args[0]}, nil)
	wantCode(t, err, CodeInvalidArgument)
	if !strings.Contains(err.Error(), "listed twice") {
		t.Fatal(err)
	}
	one := must[*Executable](t)(c.Compile(spmdText, &CompileOptions{NumReplicas: 1, NumPartitions: 1}))
	defer one.Close()
	_, _, err = one.LogicalIDs(devs[1])
	wantCode(t, err, CodeInvalidArgument)
}

const hostText = `func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %t = stablehlo.after_all : !stablehlo.token
  %s = "stablehlo.send"(%x, %t) {channel_handle = #stablehlo.channel_handle<handle = 5, type = 2>,
      is_host_transfer = true} : (tensor<2xf32>, !stablehlo.token) -> !stablehlo.token
  %r:2 = "stablehlo.recv"(%s) {channel_handle = #stablehlo.channel_handle<handle = 6, type = 3>,
      is_host_transfer = true} : (!stablehlo.token) -> (tensor<2xf32>, !stablehlo.token)
  %y = stablehlo.add %x, %r#0 : tensor<2xf32>
  return %y : tensor<2xf32>
}
`

func TestHostCallbacks(t *testing.T) {
	c := newClient(t, 2)
	devs := must[[]*Device](t)(c.Devices())
	exe := must[*Executable](t)(c.Compile(hostText, &CompileOptions{Filename: "host.mlir"}))
	defer exe.Close()
	args := make([][]*Buffer, 2)
	for d, dev := range devs {
		v := float32(d + 1)
		args[d] = []*Buffer{must[*Buffer](t)(FromSlice(must[*Memory](t)(dev.DefaultMemory()), []int64{2},
			[]float32{v, v + 1}))}
		defer args[d][0].Close()
	}
	var mu sync.Mutex
	sent := map[int32][]float32{}
	opts := &LaunchOptions{
		SendCallbacks: map[int64]HostFunc{5: func(h *HostTransfer) error {
			v, err := KernelSlice[float32](h.Tensors[0])
			if err != nil {
				return err
			}
			mu.Lock()
			sent[h.Device] = append([]float32(nil), v...)
			mu.Unlock()
			if h.Device == 1 {
				return &Error{Code: CodeDataLoss, Message: "the host is gone"}
			}
			return nil
		}},
		RecvCallbacks: map[int64]HostFunc{6: func(h *HostTransfer) error {
			v, err := KernelSlice[float32](h.Tensors[0])
			if err != nil {
				return err
			}
			for i := range v {
				v[i] = float32(100 * (h.Device + 1))
			}
			return nil
		}},
	}
	results, done, runs, err := exe.ExecuteDevices(devs, args, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := done[0].Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := must[[]float32](t)(ToSlice[float32](results[0][0])); !reflect.DeepEqual(got, []float32{101, 102}) {
		t.Fatal(got)
	}
	err = done[1].Wait(context.Background())
	wantCode(t, err, CodeDataLoss)
	if !strings.Contains(err.Error(), "the send callback of channel 5: the host is gone") {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(sent[0], []float32{1, 2}) || !reflect.DeepEqual(sent[1], []float32{2, 3}) {
		t.Fatal(sent)
	}
	for d := range devs {
		results[d][0].Close()
		done[d].Close()
		runs[d].Close()
	}
	// A missing callback is refused at execute, naming the channel.
	_, _, _, err = exe.ExecuteDevices(devs, args, &LaunchOptions{SendCallbacks: opts.SendCallbacks})
	wantCode(t, err, CodeInvalidArgument)
	if !strings.Contains(err.Error(), "channel 6 has no recv callback") {
		t.Fatal(err)
	}
}

// A buffer or event given several times to one call is read-locked once: a second RLock by the same goroutine
// would wait behind a Close (Lock) that arrived in between, which waits for the first: a deadlock.
func TestRepeatedHandlesAreReadLockedOnce(t *testing.T) {
	var m sync.RWMutex
	locks := readLocks{}
	locks.lock(&m)
	closed := make(chan struct{})
	go func() {
		m.Lock() // a Close arriving while the call holds its locks
		m.Unlock()
		close(closed)
	}()
	for m.TryRLock() { // TryRLock fails once the writer waits
		m.RUnlock()
		runtime.Gosched()
	}
	locks.lock(&m) // the same mutex again: must not take it a second time
	locks.unlock()
	<-closed

	// Through the API: the same event twice in a wait list, the same buffer for both parameters.
	c := newClient(t, 1)
	dev := must[*Device](t)(c.LookupDevice(0))
	exe := must[*Executable](t)(c.Compile(`func.func @main(%a: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<2xf32> {
  %0 = stablehlo.add %a, %b : tensor<2xf32>
  return %0 : tensor<2xf32>
}
`, nil))
	defer exe.Close()
	x := must[*Buffer](t)(FromSlice(must[*Memory](t)(dev.DefaultMemory()), []int64{2}, []float32{1, 2}))
	defer x.Close()
	first, done, run, err := exe.Execute(dev, []*Buffer{x, x}, nil, []int{0, 1})
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	defer done.Close()
	second, done2, run2, err := exe.Execute(dev, []*Buffer{first[0], first[0]}, []*Event{done, done}, []int{0, 1})
	if err != nil {
		t.Fatal(err)
	}
	defer run2.Close()
	defer done2.Close()
	if err := done2.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := must[[]float32](t)(ToSlice[float32](second[0])); !reflect.DeepEqual(got, []float32{4, 8}) {
		t.Fatal(got)
	}
	first[0].Close()
	second[0].Close()
}

// psum over "x"=2 in a shard_map: each half of f32[4] gets the sum of both, the devices on both cores (issue 26).
const manualText = `module @m {
  sdy.mesh @mesh = <["x"=2]>
  func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %1 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"x"}]>] out_shardings=[<@mesh, [{"x"}]>]
        manual_axes={"x"} (%a: tensor<2xf32>) {
      %s = "stablehlo.all_reduce"(%a) ({
        ^bb0(%x: tensor<f32>, %y: tensor<f32>):
          %t = stablehlo.add %x, %y : tensor<f32>
          stablehlo.return %t : tensor<f32>
      }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>,
          channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, use_global_device_ids}
          : (tensor<2xf32>) -> tensor<2xf32>
      sdy.return %s : tensor<2xf32>
    } : (tensor<4xf32>) -> tensor<4xf32>
    return %1 : tensor<4xf32>
  }
}
`

func TestManualComputationOnBothCores(t *testing.T) {
	c := newClient(t, 2)
	dev := must[*Device](t)(c.LookupDevice(0))
	exe := must[*Executable](t)(c.Compile(manualText, &CompileOptions{Filename: "manual.mlir"}))
	defer exe.Close()
	if p := must[ExecutableProperties](t)(exe.Properties()); p.NumManualDevices != 2 {
		t.Fatalf("%+v", p)
	}
	mem := must[*Memory](t)(dev.DefaultMemory())
	a := must[*Buffer](t)(FromSlice(mem, []int64{4}, []float32{1, 2, 30, 40}))
	defer a.Close()
	results, run, err := executeAndWait(t, exe, dev, []*Buffer{a})
	if err != nil {
		t.Fatal(err)
	}
	if got := must[[]float32](t)(ToSlice[float32](results[0])); !reflect.DeepEqual(got, []float32{31, 42, 31, 42}) {
		t.Fatal(got)
	}
	if st := must[ExecutionStats](t)(run.Stats()); st.ManualCores != 2 || st.ManualThreads != 0 {
		t.Fatalf("%+v", st)
	}
}
