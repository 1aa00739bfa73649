/** @file
 * @brief Version 7 (tiles) built for head dimension 64: its kernel and the launcher l04_tiles_d64.
 */
/** The head dimension this build of version 7 is for. */
#define HEAD_DIM 64
#include "v7_tiles.cuh"
