/** @file
 * @brief Version 1 built for head dimension 64: the kernel and its launcher l03_fused_row_d64. */
/** The head dimension this build of version 1 is for. */
#define HEAD_DIM 64
#include "v1_fused_row.cu"
