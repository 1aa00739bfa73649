/** @file
 * @brief Versions 2 and 3 built for head dimension 128: the kernel, l03_fa1_d128 and
 * l03_fa1_device_plan_d128. */
/** The head dimension this build of versions 2 and 3 is for. */
#define HEAD_DIM 128
#include "v2_fa1.cu"
