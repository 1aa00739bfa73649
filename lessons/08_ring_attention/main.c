/* Lesson 08: ring attention. `./run --help` for the options; `./run 3` runs one version. Beyond the
 * harness's options this program takes --ranks P (1..8) and --gpus G (1: every rank on one GPU,
 * virtual ranks; P: a GPU per rank); by default P is the number of visible GPUs when there are at
 * least two (a GPU per rank), else 2 virtual ranks on one GPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ring_attention.h"

/* A whole number in lo..hi, or -1. */
static int parse_count(const char *s, int lo, int hi) {
  if (!s || !*s) return -1;
  char *end = NULL;
  const long v = strtol(s, &end, 10);
  if (*end != '\0' || s[0] == ' ' || s[0] == '+' || s[0] == '-' || v < lo || v > hi) return -1;
  return (int)v;
}

int main(int argc, char **argv) {
  int ranks = 0, gpus = 0, help = 0, kept = 1;
  for (int i = 1; i < argc; ++i) {
    const int is_ranks = strcmp(argv[i], "--ranks") == 0, is_gpus = strcmp(argv[i], "--gpus") == 0;
    if (is_ranks || is_gpus) {
      const int v = i + 1 < argc ? parse_count(argv[i + 1], 1, L08_MAX_RANKS) : -1;
      if (v < 0) {
        fprintf(stderr, "lesson-8: %s takes a number of %s, 1..%d; got '%s'\n", argv[i],
                is_ranks ? "ranks" : "GPUs", L08_MAX_RANKS, i + 1 < argc ? argv[i + 1] : "");
        return 2;
      }
      *(is_ranks ? &ranks : &gpus) = v;
      ++i;
      continue;
    }
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) help = 1;
    argv[kept++] = argv[i];
  }
  argv[kept] = NULL;
  if (ranks == 0) {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
      (void)cudaGetLastError();
      count = 0;
    }
    ranks = gpus > 1
                ? gpus
                : (count >= 2 && gpus != 1 ? (count < L08_MAX_RANKS ? count : L08_MAX_RANKS) : 2);
  }
  if (gpus > 1 && gpus != ranks) {
    fprintf(stderr,
            "lesson-8: --gpus must be 1 (virtual ranks) or the number of ranks, %d; got %d\n",
            ranks, gpus);
    return 2;
  }
  l08_set_ranks(ranks, gpus);
  const int rc = attn_main(kept, argv, &l08_lesson);
  if (help)
    printf(
        "lesson 8 also takes:\n"
        "  --ranks P   ranks of the ring, 1..%d (default: the GPUs visible when at least 2, "
        "else 2)\n"
        "  --gpus G    1: every rank on one GPU (virtual ranks, copies in place of NCCL); P: a "
        "GPU per rank (default: P when that many are visible, else 1)\n",
        L08_MAX_RANKS);
  return rc;
}
