/* Version 7 (tiles) built for head dimension 128: its kernel and the launcher l04_tiles_d128. */
#define HEAD_DIM 128
#include "v7_tiles.cuh"
