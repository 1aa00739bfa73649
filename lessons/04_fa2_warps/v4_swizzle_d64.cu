/* Version 4 (swizzle) built for head dimension 64: its kernel and the launcher l04_swizzle_d64. */
#define HEAD_DIM 64
#include "v4_swizzle.cuh"
