/* Lesson 07: PagedAttention. `./run --help` for the options; `./run 2` runs one version. The
 * versions and what each changes are listed in paged_attention.h and the README. */
#include "paged_attention.h"

int main(int argc, char **argv) {
  return attn_main(argc, argv, &l07_lesson);
}
