/** @file
 * @brief Version 1 (split-K) built for head dimension 64: its kernel and the launcher
 * l04_splitk_d64. */
/** The head dimension this build of version 1 is for. */
#define HEAD_DIM 64
#include "v1_splitk.cuh"
