// The AVX-512 build of the tile programs (compiled with -mavx512f -mavx512dq -mavx512vl; called only on CPUs
// that have them).
#define NEURONMEM_TILE_RUN TileRunAvx512
#define NEURONMEM_TILE_ISA kTileAvx512
#include "interpreter/fusion_tile.inc"
