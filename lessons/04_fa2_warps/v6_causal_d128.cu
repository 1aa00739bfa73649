/* Version 6 (causal) built for head dimension 128: its kernel and the launcher l04_causal_d128. */
#define HEAD_DIM 128
#include "v6_causal.cuh"
