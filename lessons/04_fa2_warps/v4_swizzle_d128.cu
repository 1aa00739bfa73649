/** @file
 * @brief Version 4 (swizzle) built for head dimension 128: its kernel and the launcher
 * l04_swizzle_d128. */
/** The head dimension this build of version 4 is for. */
#define HEAD_DIM 128
#include "v4_swizzle.cuh"
