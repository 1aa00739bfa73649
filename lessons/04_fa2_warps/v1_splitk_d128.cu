/** @file
 * @brief Version 1 (split-K) built for head dimension 128: its kernel and the launcher
 * l04_splitk_d128. */
/** The head dimension this build of version 1 is for. */
#define HEAD_DIM 128
#include "v1_splitk.cuh"
