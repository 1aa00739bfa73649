/* Lesson 05: FlashAttention-3 on Hopper. `./run --help` for the options; `./run 2` runs one
 * version. The versions and what each changes are listed in fa3_hopper.h and the README. */
#include "fa3_hopper.h"

int main(int argc, char **argv) {
  return attn_main(argc, argv, &l05_lesson);
}
