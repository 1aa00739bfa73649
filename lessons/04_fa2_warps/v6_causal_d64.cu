/* Version 6 (causal) built for head dimension 64: its kernel and the launcher l04_causal_d64. */
#define HEAD_DIM 64
#include "v6_causal.cuh"
