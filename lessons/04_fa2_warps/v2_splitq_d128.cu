/** @file
 * @brief Version 2 (split-Q) built for head dimension 128: its kernel and the launcher
 * l04_splitq_d128. */
/** The head dimension this build of version 2 is for. */
#define HEAD_DIM 128
#include "v2_splitq.cuh"
