/* Version 3 (mma) built for head dimension 64: its kernel and the launcher l04_mma_d64. */
#define HEAD_DIM 64
#include "v3_mma.cuh"
