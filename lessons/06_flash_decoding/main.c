/* Lesson 06: Flash-Decoding. `./run --help` for the options; `./run 2` runs one version. The
 * versions and what each changes are listed in flash_decoding.h and the README. */
#include "flash_decoding.h"

int main(int argc, char **argv) {
  return attn_main(argc, argv, &l06_lesson);
}
