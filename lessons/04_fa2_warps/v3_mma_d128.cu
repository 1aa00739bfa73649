/* Version 3 (mma) built for head dimension 128: its kernel and the launcher l04_mma_d128. */
#define HEAD_DIM 128
#include "v3_mma.cuh"
