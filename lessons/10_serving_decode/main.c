/* Lesson 10: decode as a server runs it. `./run --help` for the options; `./run 1` runs one
 * version. The versions and what each changes are listed in serving_decode.h and the README. */
#include "serving_decode.h"

int main(int argc, char **argv) {
  return attn_main(argc, argv, &l10_lesson);
}
