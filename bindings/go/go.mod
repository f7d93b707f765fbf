module github.com/libneuronmem/libneuronmem/bindings/go

go 1.19
