/** @file
 * @brief Version 3 (mma) built for head dimension 128: its kernel and the launcher l04_mma_d128. */
/** The head dimension this build of version 3 is for. */
#define HEAD_DIM 128
#include "v3_mma.cuh"
