/** @file
 * @brief Version 6 (causal) built for head dimension 128: its kernel and the launcher
 * l04_causal_d128. */
/** The head dimension this build of version 6 is for. */
#define HEAD_DIM 128
#include "v6_causal.cuh"
