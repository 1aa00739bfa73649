/* Lesson 09: the backward pass. `./run --help` for the options; `./run 3` runs one version. The
 * versions and what each changes are listed in backward.h and the README. */
#include "backward.h"

int main(int argc, char **argv) {
  return attn_main(argc, argv, &l09_lesson);
}
