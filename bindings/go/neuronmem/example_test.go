package neuronmem_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"

	nm "github.com/libneuronmem/libneuronmem/bindings/go/neuronmem"
)

// Loads the manifest of a decode step, writes the decode metadata (block table, sequence lengths) into the
// pinned-host arena, uploads every argument to the memory kind the manifest asks for (pinned_host arguments
// zero-copy, the others copied), and reads each buffer back.
func Example_decodeStep() {
	manifest, err := nm.LoadManifestFile(filepath.Join("..", "..", "..", "tests", "manifest", "data",
		"decode_step.mlir"), nil)
	if err != nil {
		panic(err)
	}
	defer manifest.Close()
	client, err := nm.NewClient(&nm.Options{NumCores: 2})
	if err != nil {
		panic(err)
	}
	defer client.Close()
	device, _ := client.LookupDevice(0)
	args, _ := manifest.Arguments()
	uploads := make([]nm.UploadArgument, len(args))
	contents := make([][]byte, len(args))
	for i, a := range args {
		n, err := a.Size()
		if err != nil {
			panic(err)
		}
		contents[i] = make([]byte, n)
		for j := range contents[i] {
			contents[i][j] = byte(j % 251)
		}
		if a.MemoryKind == nm.KindPinnedHost { // decode metadata: written where the device reads it
			host, err := client.HostAllocate(n, 0)
			if err != nil {
				panic(err)
			}
			defer host.Free()
			copy(host.Bytes(), contents[i])
			uploads[i] = nm.UploadArgument{Host: host}
		} else {
			uploads[i] = nm.UploadArgument{Bytes: contents[i]}
		}
	}
	buffers, ready, err := manifest.UploadArguments(device, uploads, nm.ImmutableZeroCopy)
	if err != nil {
		panic(err)
	}
	defer ready.Close()
	if err := ready.Wait(context.Background()); err != nil {
		panic(err)
	}
	for i, b := range buffers {
		defer b.Close()
		back := make([]byte, len(contents[i]))
		if err := b.ReadAll(back); err != nil || !bytes.Equal(back, contents[i]) {
			panic(fmt.Sprint("argument ", i, " did not read back: ", err))
		}
		mem, _ := b.Memory()
		desc, _ := mem.Describe()
		zeroCopy, _ := b.IsZeroCopy()
		fmt.Printf("%s: %s%v in %s zero-copy=%v\n", args[i].Name, args[i].ElementName, args[i].Dims, desc.DebugString,
			zeroCopy)
	}
	// Output:
	// arg0: i32[8 16] in NeuronMemory(id=1, kind=pinned_host) zero-copy=true
	// arg1: i32[8] in NeuronMemory(id=1, kind=pinned_host) zero-copy=true
	// arg2: bf16[8 128] in NeuronMemory(id=0, kind=device) zero-copy=false
	// arg3: f32[8 128] in NeuronMemory(id=0, kind=device) zero-copy=false
}
