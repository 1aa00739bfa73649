/** @file
 * @brief Version 5 (cp.async) built for head dimension 64: its kernel and the launcher
 * l04_cpasync_d64. */
/** The head dimension this build of version 5 is for. */
#define HEAD_DIM 64
#include "v5_cpasync.cuh"
