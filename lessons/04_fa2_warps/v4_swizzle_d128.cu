/* Version 4 (swizzle) built for head dimension 128: its kernel and the launcher l04_swizzle_d128.
 */
#define HEAD_DIM 128
#include "v4_swizzle.cuh"
