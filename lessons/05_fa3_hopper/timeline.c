/* l05-timeline: versions 3-6 of lesson 05 (6, FP8, at dim 128 only), each launched once with the
 * pipeline timeline on, their stamps printed as CSV (version, name, block, role, tile, event,
 * cycles since the block's first stamp). The kernels stamp only when the library was built with
 * -DATTN_L05_TIMELINE=ON:
 *
 *     cmake -S . -B build-timeline -DATTN_L05_TIMELINE=ON
 *     cmake --build build-timeline --target l05-timeline
 *     build-timeline/bin/l05-timeline > timeline.csv && scripts/plot-timeline.sh timeline.csv t.svg
 *
 * Options: --dim 64|128 (128), --seq N (4096), --batch N (4), --heads N (16), --causal. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_bf16.h"
#include "attn_rng.h"
#include "fa3_hopper.h"

static const char *const kEvents[L05_TL_EVENTS] = {"k_ready", "turn",    "s_ready", "softmax",
                                                   "pv_done", "issue_k", "issue_v", "unused"};

static int arg_int(int argc, char **argv, int *i, int *out) {
  if (*i + 1 >= argc) return -1;
  char *end;
  long x = strtol(argv[++*i], &end, 10);
  if (*end || x < 1 || x > (1 << 20)) return -1;
  *out = (int)x;
  return 0;
}

int main(int argc, char **argv) {
  int dim = 128, seq = 4096, batch = 4, heads = 16, causal = 0;
  for (int i = 1; i < argc; ++i) {
    int bad = 0;
    if (!strcmp(argv[i], "--dim"))
      bad = arg_int(argc, argv, &i, &dim) || (dim != 64 && dim != 128);
    else if (!strcmp(argv[i], "--seq"))
      bad = arg_int(argc, argv, &i, &seq);
    else if (!strcmp(argv[i], "--batch"))
      bad = arg_int(argc, argv, &i, &batch);
    else if (!strcmp(argv[i], "--heads"))
      bad = arg_int(argc, argv, &i, &heads);
    else if (!strcmp(argv[i], "--causal"))
      causal = 1;
    else
      bad = 1;
    if (bad) {
      fprintf(stderr,
              "l05-timeline: bad argument '%s'; options: --dim 64|128 --seq N --batch N --heads N "
              "--causal\n",
              argv[i]);
      return 2;
    }
  }
  if (!l05_timeline_compiled()) {
    fprintf(stderr,
            "l05-timeline: this build records no stamps: configure it with "
            "-DATTN_L05_TIMELINE=ON (cmake -S . -B build-timeline -DATTN_L05_TIMELINE=ON)\n");
    return 2;
  }
  attn_device dev;
  char why[256];
  if (attn_device_query(&dev, why, sizeof why) != 0) {
    printf("%s; nothing recorded\n", why);
    return 0;
  }
  if (attn_device_sm(&dev) != 90) {
    printf("lesson 05 needs an sm_90 GPU; this one (%s) is sm_%d: nothing recorded\n", dev.name,
           attn_device_sm(&dev));
    return 0;
  }

  const size_t n = (size_t)batch * seq * heads * dim;
  float *hf = malloc(n * sizeof(float));
  uint16_t *hb = malloc(n * sizeof(uint16_t));
  unsigned long long *stamps = malloc(L05_TL_SLOTS * sizeof(unsigned long long));
  void *q = NULL, *k = NULL, *v = NULL, *o = NULL;
  float *lse = NULL;
  unsigned long long *buf = NULL;
  int rc = 1;
  if (!hf || !hb || !stamps) goto done;
  if (cudaMalloc(&q, n * 2) || cudaMalloc(&k, n * 2) || cudaMalloc(&v, n * 2) ||
      cudaMalloc(&o, n * 2) || cudaMalloc((void **)&lse, (size_t)batch * heads * seq * 4) ||
      cudaMalloc((void **)&buf, L05_TL_SLOTS * sizeof(unsigned long long)))
    goto done;
  void *const dst[3] = {q, k, v};
  for (int t = 0; t < 3; ++t) {
    attn_fill_attention_input(hf, n, 1, (uint64_t)t + 1); /* the harness's inputs */
    attn_f32_to_bf16_array(hf, hb, n);
    if (cudaMemcpy(dst[t], hb, n * 2, cudaMemcpyHostToDevice)) goto done;
  }
  printf("version,name,block,role,tile,event,cycles\n");
  for (int ver = 3; ver <= 6; ++ver) {    /* the warp-specialised versions */
    if (ver == 6 && dim != 128) continue; /* FP8 is built for dim 128 only */
    /* once to warm up, once recorded */
    if (l05_forward(ver, dim, q, k, v, o, lse, batch, heads, heads, seq, seq, causal, 0.f, 0))
      goto done;
    if (cudaMemset(buf, 0, L05_TL_SLOTS * sizeof(unsigned long long))) goto done;
    l05_timeline_set(buf);
    cudaError_t e =
        l05_forward(ver, dim, q, k, v, o, lse, batch, heads, heads, seq, seq, causal, 0.f, 0);
    l05_timeline_set(NULL);
    if (e || cudaDeviceSynchronize() ||
        cudaMemcpy(stamps, buf, L05_TL_SLOTS * sizeof(unsigned long long), cudaMemcpyDeviceToHost))
      goto done;
    const int per_block = L05_TL_ROLES * L05_TL_TILES * L05_TL_EVENTS;
    for (int b = 0; b < L05_TL_BLOCKS; ++b) {
      const unsigned long long *s = stamps + (size_t)b * per_block;
      unsigned long long t0 = 0;
      for (int i = 0; i < per_block; ++i)
        if (s[i] && (!t0 || s[i] < t0)) t0 = s[i];
      for (int i = 0; i < per_block; ++i) {
        if (!s[i]) continue;
        const int ev = i % L05_TL_EVENTS, tile = i / L05_TL_EVENTS % L05_TL_TILES,
                  role = i / (L05_TL_EVENTS * L05_TL_TILES);
        printf("%d,%s,%d,%d,%d,%s,%llu\n", ver, l05_version_name(ver), b, role, tile, kEvents[ev],
               s[i] - t0);
      }
    }
  }
  rc = 0;
done:
  if (rc) fprintf(stderr, "l05-timeline: %s\n", cudaGetErrorString(cudaGetLastError()));
  cudaFree(q), cudaFree(k), cudaFree(v), cudaFree(o), cudaFree(lse), cudaFree(buf);
  free(hf), free(hb), free(stamps);
  return rc;
}
