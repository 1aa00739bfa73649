/** @file
 * @brief Version 2 (split-Q) built for head dimension 64: its kernel and the launcher
 * l04_splitq_d64. */
/** The head dimension this build of version 2 is for. */
#define HEAD_DIM 64
#include "v2_splitq.cuh"
