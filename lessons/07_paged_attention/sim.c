/* Lesson 07's serving simulation (sim.h). */
#include "sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn_rng.h"

/* A length drawn log-uniformly from [lo, hi]. */
static int draw(attn_rng *r, int lo, int hi) {
  const double x = exp(log((double)lo) + attn_rng_uniform(r) * (log((double)hi) - log((double)lo)));
  const int n = (int)(x + 0.5);
  return n < lo ? lo : (n > hi ? hi : n);
}

typedef struct request {
  int prompt, output, done; /* done: output tokens generated so far */
} request;

static void start(attn_rng *r, const l07_sim_config *cfg, request *q) {
  q->prompt = draw(r, cfg->prompt_min, cfg->prompt_max);
  q->output = draw(r, cfg->output_min, cfg->output_max);
  if (q->prompt + q->output > cfg->max_context) q->output = cfg->max_context - q->prompt;
  q->done = 0;
}

int l07_simulate(const l07_sim_config *cfg, l07_sim_result *out) {
  memset(out, 0, sizeof *out);
  if (cfg->live < 1 || cfg->steps < 1 || cfg->prompt_min < 1 || cfg->prompt_max < cfg->prompt_min ||
      cfg->output_min < 1 || cfg->output_max < cfg->output_min ||
      cfg->max_context < cfg->prompt_max + cfg->output_min)
    return -1;
  request *q = (request *)malloc(sizeof(request) * (size_t)cfg->live);
  if (!q) return -1;
  attn_rng r;
  attn_rng_seed(&r, cfg->seed, 7);
  for (int i = 0; i < L07_SIM_BLOCK_SIZES; ++i) out->block_size[i] = 1 << i;
  for (int i = 0; i < cfg->live; ++i) {
    start(&r, cfg, &q[i]);
    /* Stagger the start: each request is somewhere in its output, as in a running server. */
    q[i].done = (int)attn_rng_below(&r, (uint32_t)q[i].output);
    out->requests++;
  }
  for (int s = 0; s < cfg->steps; ++s) {
    for (int i = 0; i < cfg->live; ++i) {
      const int held = q[i].prompt + q[i].done + 1; /* the prompt, the output so far, this token */
      out->tokens += held;
      out->reserved_max_context += cfg->max_context;
      out->reserved_prompt_output += q[i].prompt + cfg->output_max;
      for (int b = 0; b < L07_SIM_BLOCK_SIZES; ++b) {
        const int bs = out->block_size[b];
        out->reserved_paged[b] += (double)((held + bs - 1) / bs) * bs;
      }
      if (++q[i].done >= q[i].output) { /* finished: a new request takes the slot */
        start(&r, cfg, &q[i]);
        out->requests++;
      }
    }
  }
  free(q);
  return 0;
}
