// The AVX2+FMA build of the tile programs (compiled with -mavx2 -mfma; called only on CPUs that have them).
#define NEURONMEM_TILE_RUN TileRunAvx2
#define NEURONMEM_TILE_ISA kTileAvx2
#include "interpreter/fusion_tile.inc"
