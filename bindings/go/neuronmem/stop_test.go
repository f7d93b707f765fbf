package neuronmem

import (
	"context"
	"testing"
	"time"
)

// An endless loop: its condition never turns false.
const endlessText = `func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.while(%v = %a) : tensor<4xf32>
    cond {
      %t = stablehlo.constant dense<true> : tensor<i1>
      stablehlo.return %t : tensor<i1>
    } do {
      %one = stablehlo.constant dense<1.0> : tensor<4xf32>
      %n = stablehlo.add %v, %one : tensor<4xf32>
      stablehlo.return %n : tensor<4xf32>
    }
  return %0 : tensor<4xf32>
}
`

// Cancel and the deadlines stop a runaway execution (issue 23): execute returns at once, the done event fails
// with CANCELLED or DEADLINE_EXCEEDED, and the client closes afterwards.
func TestCancelAndTimeouts(t *testing.T) {
	c := newClient(t, 1)
	dev := must[*Device](t)(c.LookupDevice(0))
	exe := must[*Executable](t)(c.Compile(endlessText, &CompileOptions{Filename: "go.mlir"}))
	defer exe.Close()
	hbm := must[*Memory](t)(dev.MemoryOfKind(KindDevice))
	a := must[*Buffer](t)(FromSlice(hbm, []int64{4}, []float32{1, 2, 3, 4}))
	defer a.Close()
	closeAll := func(results []*Buffer, done *Event, run *Execution) {
		for _, r := range results {
			r.Close()
		}
		done.Close()
		run.Close()
	}

	results, done, run, err := exe.Execute(dev, []*Buffer{a}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if must[bool](t)(done.IsReady()) {
		t.Fatal("an endless loop finished")
	}
	if err := run.Cancel(); err != nil {
		t.Fatal(err)
	}
	wantCode(t, done.Wait(context.Background()), CodeCancelled)
	if err := run.Cancel(); err != nil { // after the end: nothing changes
		t.Fatal(err)
	}
	closeAll(results, done, run)

	results, done, run, err = exe.ExecuteTimeout(dev, []*Buffer{a}, nil, nil, 30*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, done.Wait(context.Background()), CodeDeadlineExceeded)
	closeAll(results, done, run)

	if _, _, _, err := exe.ExecuteTimeout(dev, []*Buffer{a}, nil, nil, -time.Second); err == nil {
		t.Fatal("a negative timeout was accepted")
	}

	rs, ds, xs, err := exe.ExecuteDevices([]*Device{dev}, [][]*Buffer{{a}}, &LaunchOptions{Timeout: 30 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, ds[0].Wait(context.Background()), CodeDeadlineExceeded)
	closeAll(rs[0], ds[0], xs[0])
}

func TestClientExecutionTimeout(t *testing.T) {
	c, err := NewClient(&Options{NumCores: 1, DeviceBytesPerCore: 2 << 20, PinnedHostBytes: 32 << 20,
		ExecutionTimeout: 30 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}()
	dev := must[*Device](t)(c.LookupDevice(0))
	exe := must[*Executable](t)(c.Compile(endlessText, &CompileOptions{Filename: "go.mlir"}))
	defer exe.Close()
	a := must[*Buffer](t)(FromSlice(must[*Memory](t)(dev.MemoryOfKind(KindDevice)), []int64{4}, []float32{1, 2, 3, 4}))
	defer a.Close()
	results, done, run, err := exe.Execute(dev, []*Buffer{a}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, done.Wait(context.Background()), CodeDeadlineExceeded)
	for _, r := range results {
		r.Close()
	}
	done.Close()
	// NoTimeout: none, though the client sets one.
	results, done, run2, err := exe.ExecuteTimeout(dev, []*Buffer{a}, nil, nil, NoTimeout)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if must[bool](t)(done.IsReady()) {
		t.Fatal("NoTimeout still timed out")
	}
	if err := run2.Cancel(); err != nil {
		t.Fatal(err)
	}
	wantCode(t, done.Wait(context.Background()), CodeCancelled)
	for _, r := range results {
		r.Close()
	}
	done.Close()
	run.Close()
	run2.Close()
}

func TestNegativeClientTimeoutIsRefused(t *testing.T) {
	if _, err := NewClient(&Options{NumCores: 1, ExecutionTimeout: -1}); err == nil {
		t.Fatal("a negative ExecutionTimeout was accepted")
	}
}
