// The baseline (x86-64 SSE2) build of the tile programs.
#define NEURONMEM_TILE_RUN TileRunBase
#define NEURONMEM_TILE_ISA kTileBase
#include "interpreter/fusion_tile.inc"
