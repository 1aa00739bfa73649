/* Version 1 (split-K) built for head dimension 128: its kernel and the launcher l04_splitk_d128. */
#define HEAD_DIM 128
#include "v1_splitk.cuh"
