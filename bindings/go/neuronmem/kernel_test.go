package neuronmem

import (
	"encoding/base64"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
)

const scaleText = `func.func @main(%a: tensor<2x2xf32> {mhlo.memory_kind = "pinned_host"}) -> tensor<2x2xf32> {
  %0 = stablehlo.custom_call @go.scale2(%a) {backend_config = "opaque-config"} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %1 = stablehlo.add %0, %0 : tensor<2x2xf32>
  return %1 : tensor<2x2xf32>
}
`

func nkiText(funcName string, grid int) string {
	config := base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf(`{"func_name":%q,"grid":[%d]}`, funcName, grid)))
	return `func.func @main(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %0 = stablehlo.custom_call @AwsNeuronCustomNativeKernel(%a, %b)
      {backend_config = "` + config + `"}
      : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
`
}

// runKernelGraph uploads args into the executable's parameter memories of device 0, executes, and returns
// the first result (or the execution's error).
func runKernelGraph(t *testing.T, c *Client, exe *Executable, dims []int64, args ...[]float32) ([]float32, error) {
	t.Helper()
	dev := must[*Device](t)(c.LookupDevice(0))
	var bufs []*Buffer
	for i, a := range args {
		b := must[*Buffer](t)(FromSlice(must[*Memory](t)(exe.ParameterMemory(dev, i)), dims, a))
		defer b.Close()
		bufs = append(bufs, b)
	}
	results, _, err := executeAndWait(t, exe, dev, bufs)
	if err != nil {
		return nil, err
	}
	return ToSlice[float32](results[0])
}

func TestKernelPlainCustomCall(t *testing.T) {
	c := newClient(t, 2)
	var seen []string
	err := c.RegisterKernel("go.scale2", func(k *KernelCall) error {
		in, err := KernelSlice[float32](k.Inputs[0])
		if err != nil {
			return err
		}
		out, err := KernelSlice[float32](k.Outputs[0])
		if err != nil {
			return err
		}
		for i := range in {
			out[i] = 2 * in[i]
		}
		seen = append(seen, fmt.Sprintf("%s %s %s %v %v %v %v %d", k.Target, k.Name, k.BackendConfig, k.Grid,
			k.Inputs[0].Dims, k.Inputs[0].MemoryKind, k.Outputs[0].MemoryKind, k.Device))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC() // the client keeps the func
	exe := must[*Executable](t)(c.Compile(scaleText, nil))
	defer exe.Close()
	got, err := runKernelGraph(t, c, exe, []int64{2, 2}, []float32{1, 2, 3, 4})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, []float32{4, 8, 12, 16}) {
		t.Fatal(got)
	}
	want := []string{"go.scale2 go.scale2 opaque-config [] [2 2] pinned_host device 0"}
	if !reflect.DeepEqual(seen, want) {
		t.Fatalf("%q", seen)
	}
}

func TestKernelNkiGrid(t *testing.T) {
	c := newClient(t, 2)
	var mu sync.Mutex
	var points []int
	err := c.RegisterKernel("nki_add", func(k *KernelCall) error {
		if k.Target != "AwsNeuronCustomNativeKernel" || !reflect.DeepEqual(k.Grid, []int64{4}) {
			return &Error{Code: CodeInternal, Message: fmt.Sprintf("unexpected call %+v", k)}
		}
		p := int(k.GridIndex[0])
		mu.Lock()
		points = append(points, p)
		mu.Unlock()
		a, _ := KernelSlice[float32](k.Inputs[0])
		b, _ := KernelSlice[float32](k.Inputs[1])
		out, err := KernelSlice[float32](k.Outputs[0])
		if err != nil {
			return err
		}
		for i := 2 * p; i < 2*p+2; i++ {
			out[i] = a[i] + b[i]
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	exe := must[*Executable](t)(c.Compile(nkiText("nki_add", 4), nil))
	defer exe.Close()
	got, err := runKernelGraph(t, c, exe, []int64{8}, []float32{1, 2, 3, 4, 5, 6, 7, 8},
		[]float32{10, 20, 30, 40, 50, 60, 70, 80})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, []float32{11, 22, 33, 44, 55, 66, 77, 88}) {
		t.Fatal(got)
	}
	sort.Ints(points)
	if !reflect.DeepEqual(points, []int{0, 1, 2, 3}) {
		t.Fatal(points)
	}
	// A typed view of the wrong type is refused.
	if _, err := KernelSlice[int32](KernelTensor{ElementType: F32}); CodeOf(err) != CodeInvalidArgument {
		t.Fatal(err)
	}
}

func TestKernelErrors(t *testing.T) {
	c := newClient(t, 2)
	kernels := map[string]KernelFunc{
		"nki_fail": func(k *KernelCall) error {
			if k.GridIndex[0] == 2 {
				return &Error{Code: CodeDataLoss, Message: "the tile was corrupt"}
			}
			return nil
		},
		"go_plain_error": func(k *KernelCall) error { return errors.New("a plain Go error") },
		"go_panic":       func(k *KernelCall) error { panic("the kernel panicked on purpose") },
	}
	for name, k := range kernels {
		if err := c.RegisterKernel(name, k); err != nil {
			t.Fatal(err)
		}
	}
	ones := []float32{1, 1, 1, 1, 1, 1, 1, 1}
	for _, tc := range []struct {
		name  string
		code  Code
		words []string
	}{
		{"nki_fail", CodeDataLoss, []string{"kernel 'nki_fail' at grid point [2]", "the tile was corrupt"}},
		{"go_plain_error", CodeUnknown, []string{"a plain Go error"}},
		{"go_panic", CodeInternal, []string{"the Go kernel panicked: the kernel panicked on purpose"}},
	} {
		exe := must[*Executable](t)(c.Compile(nkiText(tc.name, 3), &CompileOptions{Filename: "k.mlir"}))
		_, err := runKernelGraph(t, c, exe, []int64{8}, ones, ones)
		exe.Close()
		wantCode(t, err, tc.code)
		for _, w := range append(tc.words, "k.mlir:2:") {
			if !strings.Contains(err.Error(), w) {
				t.Fatalf("%v lacks %q", err, w)
			}
		}
	}
	_, err := c.Compile(nkiText("missing", 1), nil)
	wantCode(t, err, CodeUnimplemented)
	wantCode(t, c.RegisterKernel("", kernels["nki_fail"]), CodeInvalidArgument)
	wantCode(t, c.RegisterKernel("x", nil), CodeInvalidArgument)
	// Targets the executor runs itself are refused, and the refused func is not kept.
	before := len(c.kernels)
	for _, name := range []string{"MoveToHost", "annotate_device_placement", "AwsNeuronCustomNativeKernel", "check.expect_eq"} {
		wantCode(t, c.RegisterKernel(name, kernels["nki_fail"]), CodeInvalidArgument)
	}
	if len(c.kernels) != before {
		t.Fatalf("refused registrations kept %d kernels", len(c.kernels)-before)
	}
}

func TestKernelsAreReleasedWithTheClient(t *testing.T) {
	c, err := NewClient(&Options{NumCores: 1})
	if err != nil {
		t.Fatal(err)
	}
	noop := func(k *KernelCall) error { return nil }
	for i := 0; i < 2; i++ { // a replaced kernel stays for the executables compiled before
		if err := c.RegisterKernel("k1", noop); err != nil {
			t.Fatal(err)
		}
	}
	exe := must[*Executable](t)(c.Compile(nkiText("k1", 1), nil))
	wantCode(t, c.Close(), CodeFailedPrecondition) // refused while the executable lives: the kernels stay
	if len(c.kernels) != 2 {
		t.Fatal(len(c.kernels))
	}
	exe.Close()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if c.kernels != nil {
		t.Fatal("kernels kept after the client was destroyed")
	}
	wantCode(t, c.RegisterKernel("k2", noop), CodeFailedPrecondition)
}
