/* Lesson 04: FlashAttention-2 on tensor cores. `./run --help` for the options; `./run 6` runs one
 * version. The versions and what each changes are listed in fa2_warps.h and the README. */
#include "fa2_warps.h"

int main(int argc, char **argv) {
  return attn_main(argc, argv, &l04_lesson);
}
