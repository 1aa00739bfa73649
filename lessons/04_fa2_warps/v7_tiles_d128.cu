/** @file
 * @brief Version 7 (tiles) built for head dimension 128: its kernel and the launcher
 * l04_tiles_d128. */
/** The head dimension this build of version 7 is for. */
#define HEAD_DIM 128
#include "v7_tiles.cuh"
