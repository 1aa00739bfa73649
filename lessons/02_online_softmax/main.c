/* lesson-2: online softmax and warp-shuffle reductions. `./run --help` for the options. */
#include "online_softmax.h"

int main(int argc, char **argv) {
  return attn_main(argc, argv, &l02_lesson);
}
