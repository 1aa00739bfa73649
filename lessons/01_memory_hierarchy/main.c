/* Lesson 01: the memory hierarchy, measured; naive attention that lives in HBM.
 *
 *     make lesson-1 && ./run             every probe, the pyramid, the naive attention
 *     ./run 15 --causal --seq 2048       one version (numbers: ./run --help)
 */
#include "memory_hierarchy.h"

int main(int argc, char **argv) {
  return attn_main(argc, argv, &l01_lesson);
}
