/* Lesson 3: FlashAttention-1. `./run [VERSION] [--seq N] [--dim 64|128] [--causal] ...`; see the
 * README. */
#include "fa1_tiling.h"

int main(int argc, char **argv) {
  return attn_main(argc, argv, &l03_lesson);
}
