/** @file
 * @brief Version 5 (cp.async) built for head dimension 128: its kernel and the launcher
 * l04_cpasync_d128. */
/** The head dimension this build of version 5 is for. */
#define HEAD_DIM 128
#include "v5_cpasync.cuh"
