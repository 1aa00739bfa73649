/** @file
 * @brief Version 4 (swizzle) built for head dimension 64: its kernel and the launcher
 * l04_swizzle_d64. */
/** The head dimension this build of version 4 is for. */
#define HEAD_DIM 64
#include "v4_swizzle.cuh"
