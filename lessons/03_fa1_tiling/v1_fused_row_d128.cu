/** @file
 * @brief Version 1 built for head dimension 128: the kernel and its launcher l03_fused_row_d128. */
/** The head dimension this build of version 1 is for. */
#define HEAD_DIM 128
#include "v1_fused_row.cu"
