/** @file
 * @brief Versions 2 and 3 built for head dimension 64: the kernel, l03_fa1_d64 and
 * l03_fa1_device_plan_d64. */
/** The head dimension this build of versions 2 and 3 is for. */
#define HEAD_DIM 64
#include "v2_fa1.cu"
