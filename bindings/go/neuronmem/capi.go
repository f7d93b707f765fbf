package neuronmem

// The C side: helpers.c builds args structs from plain arguments; the library comes from pkg-config.

/*
#cgo pkg-config: neuronmem
#include "helpers.h"
*/
import "C"
