package neuronmem

import "testing"

// The Go side of the bindings' latency figures (scripts/bench-bindings.sh; the C baseline is
// bindings/bench/upload_latency.c): a 256-byte f32[64] upload into core 0's device memory then Close, and a
// 256-byte in-place write.

func benchSetup(b *testing.B) (*Client, *Memory, []float32) {
	c, err := NewClient(&Options{NumCores: 2})
	if err != nil {
		b.Fatal(err)
	}
	mem, err := c.LookupMemory(0)
	if err != nil {
		b.Fatal(err)
	}
	data := make([]float32, 64)
	for i := range data {
		data[i] = float32(i)
	}
	return c, mem, data
}

func BenchmarkUpload256(b *testing.B) {
	c, mem, data := benchSetup(b)
	defer c.Close()
	dims := []int64{64}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		buf, err := FromSlice(mem, dims, data)
		if err != nil {
			b.Fatal(err)
		}
		buf.Close()
	}
}

func BenchmarkWrite256(b *testing.B) {
	c, mem, data := benchSetup(b)
	defer c.Close()
	buf, err := FromSlice(mem, []int64{64}, data)
	if err != nil {
		b.Fatal(err)
	}
	defer buf.Close()
	raw := sliceBytes(data)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := buf.Write(raw, 0); err != nil {
			b.Fatal(err)
		}
	}
}
