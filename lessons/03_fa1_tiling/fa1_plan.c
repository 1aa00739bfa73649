/* The FA1 kernel's tile plan: Algorithm 1's tile sizes, capped to what the kernel supports, and the
 * number of blocks per (batch, head). Shared by the launchers, the CPU model and the report.
 * See fa1_tiling.h. */
#include <math.h>

#include "fa1_tiling.h"
#include "tile_loops.h"

/* The kernel's warp tiles are 16 query rows by 32 keys: Bc must be a multiple of 32 and Br of 16.
 */
#define BC_STEP 32

size_t l03_fa1_smem_floats(int br, int bc, int ld_s, int d) {
  return (size_t)d * bc      /* K_j, transposed */
         + (size_t)bc * d    /* V_j */
         + (size_t)d * br    /* Q_i, transposed */
         + (size_t)bc * ld_s /* S_ij (then P~_ij), transposed */
         + 2 * (size_t)br;   /* the two factors of the O_i update, per row */
}

/* Pitch of the transposed S tile: at least br, a multiple of 8 floats (float4 rows), and 8 more
 * than a multiple of 32 so that 4 consecutive keys of 8 consecutive rows fall in 32 different banks
 * (the row-statistics pass reads exactly that pattern). */
static int pitch_s(int br) {
  return br + (8 - br % 32 + 32) % 32;
}

int l03_fa1_plan_make(const attn_problem *p, long smem_floats, l03_fa1_plan *plan) {
  const int d = p->dim;
  plan->smem_floats = smem_floats;
  l03_paper_tile_sizes(smem_floats, d, &plan->br_paper, &plan->bc_paper);
  int bc = plan->bc_paper / BC_STEP * BC_STEP;
  for (; bc >= BC_STEP; bc -= BC_STEP) {
    int br = bc < d ? bc : d;
    if (l03_fa1_smem_floats(br, bc, pitch_s(br), d) <= (size_t)smem_floats) break;
  }
  if (bc < BC_STEP) return -1;
  plan->bc = bc;
  plan->br = bc < d ? bc : d;
  plan->ld_s = pitch_s(plan->br);
  plan->tr = l03_num_tiles(p->seq_q, plan->br);
  plan->tc = l03_num_tiles(p->seq_kv, plan->bc);
  plan->smem_bytes = l03_fa1_smem_floats(plan->br, plan->bc, plan->ld_s, d) * sizeof(float);
  plan->q_groups = 1;
  plan->slots = 0;
  return 0;
}

int l03_fa1_choose_groups(int bh, int tr, int slots) {
  if (tr <= 0 || bh <= 0) return 1;
  if (slots < 1) slots = 1;
  /* Efficiency of g groups: all the tile work divided by what the launch occupies, i.e. waves of
   * `slots` blocks, each wave as long as the block with the most query tiles. */
  double best = 0.0;
  for (int g = 1; g <= tr; ++g) {
    double waves = ceil((double)bh * g / slots), per_block = ceil((double)tr / g);
    double eff = (double)bh * tr / (waves * slots * per_block);
    if (eff > best) best = eff;
  }
  for (int g = 1; g <= tr; ++g) {
    double waves = ceil((double)bh * g / slots), per_block = ceil((double)tr / g);
    double eff = (double)bh * tr / (waves * slots * per_block);
    if (eff >= 0.95 * best) return g; /* fewest groups: each group re-reads K and V */
  }
  return tr;
}

int l03_device_smem_floats(long *smem_floats) {
  int count = 0, dev = 0, bytes = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0 ||
      cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess ||
      bytes <= 0) {
    (void)cudaGetLastError();
    return -1;
  }
  *smem_floats = bytes / (long)sizeof(float);
  return 0;
}

size_t l03_fa1_workspace_bytes(const attn_problem *p) {
  return 2 * attn_rows(p) * sizeof(float);
}
