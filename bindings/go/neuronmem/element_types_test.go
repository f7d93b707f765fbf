package neuronmem

import (
	"reflect"
	"testing"
)

// The element types from 13 on (issue 25): complex64/128 as Go's complex types, the 8- and 6-bit floats as
// uint8 bit patterns.
func TestElementTypesComplexAndSmallFloats(t *testing.T) {
	sizes := map[ElementType]uint64{C64: 8, C128: 16, F8E5M2: 1, F8E4M3FN: 1, F8E8M0FNU: 1, F6E2M3FN: 1, F6E3M2FN: 1}
	for et, n := range sizes {
		if et.Size() != n {
			t.Fatalf("%v: %d bytes", et, et.Size())
		}
	}
	if ElementType(30).Size() != 0 || ElementTypeOf[complex64]() != C64 || ElementTypeOf[complex128]() != C128 {
		t.Fatal("element types")
	}
	c := newClient(t, 1)
	dev := must[*Device](t)(c.LookupDevice(0))
	exe := must[*Executable](t)(c.Compile(`func.func @main(%re: tensor<2xf32>, %im: tensor<2xf32>) -> tensor<2xcomplex<f32>> {
  %0 = stablehlo.complex %re, %im : tensor<2xcomplex<f32>>
  return %0 : tensor<2xcomplex<f32>>
}
`, nil))
	defer exe.Close()
	if outs := must[[]ExecutableValue](t)(exe.Outputs()); outs[0].ElementType != C64 || outs[0].Bytes != 16 {
		t.Fatalf("%+v", outs)
	}
	re := must[*Buffer](t)(FromSlice(must[*Memory](t)(exe.ParameterMemory(dev, 0)), []int64{2}, []float32{1.5, -2}))
	defer re.Close()
	im := must[*Buffer](t)(FromSlice(must[*Memory](t)(exe.ParameterMemory(dev, 1)), []int64{2}, []float32{0.25, 8}))
	defer im.Close()
	results, _, err := executeAndWait(t, exe, dev, []*Buffer{re, im})
	if err != nil {
		t.Fatal(err)
	}
	if got := must[[]complex64](t)(ToSlice[complex64](results[0])); !reflect.DeepEqual(got, []complex64{1.5 + 0.25i, -2 + 8i}) {
		t.Fatal(got)
	}

	toF8 := must[*Executable](t)(c.Compile(`func.func @main(%z: tensor<2xcomplex<f64>>) -> tensor<2xf8E4M3FN> {
  %0 = stablehlo.real %z : (tensor<2xcomplex<f64>>) -> tensor<2xf64>
  %1 = stablehlo.convert %0 : (tensor<2xf64>) -> tensor<2xf8E4M3FN>
  return %1 : tensor<2xf8E4M3FN>
}
`, nil))
	defer toF8.Close()
	z := must[*Buffer](t)(FromSlice(must[*Memory](t)(toF8.ParameterMemory(dev, 0)), []int64{2}, []complex128{1, -2}))
	defer z.Close()
	results, _, err = executeAndWait(t, toF8, dev, []*Buffer{z})
	if err != nil {
		t.Fatal(err)
	}
	if et := must[ElementType](t)(results[0].ElementType()); et != F8E4M3FN {
		t.Fatal(et)
	}
	if got := must[[]uint8](t)(ToSlice[uint8](results[0])); !reflect.DeepEqual(got, []uint8{0x38, 0xC0}) {
		t.Fatal(got)
	}
}
