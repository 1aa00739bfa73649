/* The shared command line. See attn_cli.h. */
#include "attn_cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

enum {
  OPT_BATCH = 256,
  OPT_HEADS,
  OPT_KV_HEADS,
  OPT_SEQ,
  OPT_KV_SEQ,
  OPT_DIM,
  OPT_CAUSAL,
  OPT_BLOCK_SIZE,
  OPT_SEED,
  OPT_ITERS,
  OPT_WARMUP,
  OPT_CHECK_ONLY,
  OPT_NO_CHECK,
  OPT_CPU,
  OPT_CSV,
  OPT_KV_LENS,
  OPT_HELP = 'h'
};

static const struct option kOptions[] = {{"batch", required_argument, NULL, OPT_BATCH},
                                         {"heads", required_argument, NULL, OPT_HEADS},
                                         {"kv-heads", required_argument, NULL, OPT_KV_HEADS},
                                         {"seq", required_argument, NULL, OPT_SEQ},
                                         {"kv-seq", required_argument, NULL, OPT_KV_SEQ},
                                         {"dim", required_argument, NULL, OPT_DIM},
                                         {"causal", no_argument, NULL, OPT_CAUSAL},
                                         {"block-size", required_argument, NULL, OPT_BLOCK_SIZE},
                                         {"seed", required_argument, NULL, OPT_SEED},
                                         {"iters", required_argument, NULL, OPT_ITERS},
                                         {"warmup", required_argument, NULL, OPT_WARMUP},
                                         {"check-only", no_argument, NULL, OPT_CHECK_ONLY},
                                         {"no-check", no_argument, NULL, OPT_NO_CHECK},
                                         {"cpu", no_argument, NULL, OPT_CPU},
                                         {"csv", required_argument, NULL, OPT_CSV},
                                         {"kv-lens", required_argument, NULL, OPT_KV_LENS},
                                         {"help", no_argument, NULL, OPT_HELP},
                                         {NULL, 0, NULL, 0}};

static int fail(char *err, size_t len, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, len, fmt, ap);
  va_end(ap);
  return ATTN_CLI_ERROR;
}

/* Digits only: no sign, no spaces (strtol would take " 128" and "+3"); leading zeros are fine. */
static int all_digits(const char *s) {
  if (!s || !*s) return 0;
  for (; *s; ++s)
    if (*s < '0' || *s > '9') return 0;
  return 1;
}

/* A whole decimal integer in [lo, hi], or -1. */
static int parse_int(const char *s, long lo, long hi, long *out) {
  if (!all_digits(s)) return -1;
  char *end = NULL;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

static int parse_u64(const char *s, uint64_t *out) {
  if (!all_digits(s)) return -1;
  char *end = NULL;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno != 0 || *end != '\0') return -1;
  *out = (uint64_t)v;
  return 0;
}

static void dims_list(const int *dims, int n, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; i < n && used < len; ++i)
    used += (size_t)snprintf(buf + used, len - used, "%s%d", i ? ", " : "", dims[i]);
}

int attn_problem_validate(const attn_problem *p, const int *dims, int n_dims, char *err,
                          size_t err_len) {
  const struct {
    const char *name;
    int v;
  } sizes[] = {{"--batch", p->batch},          {"--heads", p->heads},
               {"--kv-heads", p->kv_heads},    {"--seq", p->seq_q},
               {"--kv-seq", p->seq_kv},        {"--dim", p->dim},
               {"--block-size", p->block_size}};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; ++i) {
    if (sizes[i].v < 1 || sizes[i].v > ATTN_MAX_EXTENT) {
      fail(err, err_len, "%s must be in 1..%d, got %d", sizes[i].name, ATTN_MAX_EXTENT, sizes[i].v);
      return -1;
    }
  }
  if (p->kv_heads > p->heads || p->heads % p->kv_heads != 0) {
    fail(err, err_len,
         "--heads %d is not a multiple of --kv-heads %d (each KV head serves a whole "
         "group of query heads)",
         p->heads, p->kv_heads);
    return -1;
  }
  if (dims && n_dims > 0) {
    int ok = 0;
    for (int i = 0; i < n_dims; ++i) ok |= dims[i] == p->dim;
    if (!ok) {
      char list[128];
      dims_list(dims, n_dims, list, sizeof list);
      fail(err, err_len, "--dim %d is not built by this lesson; valid: %s", p->dim, list);
      return -1;
    }
  } else if (p->dim > 1024) {
    fail(err, err_len, "--dim must be in 1..1024, got %d", p->dim);
    return -1;
  }
  double q = (double)p->batch * p->seq_q * p->heads * p->dim;
  double kv = (double)p->batch * p->seq_kv * p->kv_heads * p->dim;
  if (q > (double)ATTN_MAX_TENSOR_ELEMS || kv > (double)ATTN_MAX_TENSOR_ELEMS) {
    fail(err, err_len, "problem too large: Q has %.3g and K %.3g elements, the limit is 2^36 each",
         q, kv);
    return -1;
  }
  if (!(p->scale >= 0.0f)) {
    fail(err, err_len, "softmax scale must be positive (0 means 1/sqrt(dim))");
    return -1;
  }
  return 0;
}

/* "128k,1024x31" into lens[]: returns the count, or -1 with a message in err. */
static int parse_kv_lens(const char *arg, int *lens, char *err, size_t err_len) {
  int n = 0;
  const char *s = arg;
  while (s && *s) {
    char *end;
    errno = 0;
    if (*s < '0' || *s > '9') break;
    long len = strtol(s, &end, 10), count = 1;
    if (errno || end == s) break;
    if (*end == 'k') len *= 1024, ++end;
    if (*end == 'x') {
      const char *c = end + 1;
      if (*c < '0' || *c > '9') break;
      count = strtol(c, &end, 10);
      if (errno || count < 1) break;
    }
    if (len < 1 || len > ATTN_MAX_EXTENT) {
      fail(err, err_len, "--kv-lens: a length must be in 1..%d, got %ld", ATTN_MAX_EXTENT, len);
      return -1;
    }
    if (count > ATTN_MAX_KV_LENS - n) {
      fail(err, err_len, "--kv-lens: at most %d sequences", ATTN_MAX_KV_LENS);
      return -1;
    }
    for (long i = 0; i < count; ++i) lens[n++] = (int)len;
    if (*end == '\0') return n;
    if (*end != ',') break;
    s = end + 1;
  }
  fail(err, err_len,
       "--kv-lens must be lengths separated by commas (N, Nk, NxCOUNT), e.g. 128k,1024x31; got "
       "'%s'",
       arg);
  return -1;
}

void attn_cli_usage(const attn_cli_spec *s, FILE *out) {
  const attn_problem *d = &s->defaults;
  fprintf(out, "usage: %s [VERSION] [options]\n", s->program);
  if (s->title) fprintf(out, "%s\n", s->title);
  fprintf(out,
          "\nVERSION runs one version (1..%d); without it every version runs.\n"
          "\nshape:\n"
          "  --batch N        sequences (default %d)\n"
          "  --heads N        query heads (default %d)\n"
          "  --kv-heads N     key/value heads, divides --heads (default: %s)\n"
          "  --seq N          query tokens per sequence (default %d)\n"
          "  --kv-seq N       key/value tokens per sequence (default: %s)\n"
          "  --dim N          head dimension (default %d",
          s->n_versions, d->batch, d->heads, d->kv_heads ? "see below" : "same as --heads",
          d->seq_q, d->seq_kv ? "see below" : "same as --seq", d->dim);
  if (s->dims && s->n_dims > 0) {
    char list[128];
    dims_list(s->dims, s->n_dims, list, sizeof list);
    fprintf(out, "; built: %s", list);
  }
  fprintf(out, ")\n");
  if (d->kv_heads) fprintf(out, "                   (--kv-heads defaults to %d)\n", d->kv_heads);
  if (d->seq_kv) fprintf(out, "                   (--kv-seq defaults to %d)\n", d->seq_kv);
  fprintf(
      out,
      "  --kv-lens LIST   a length per sequence, e.g. 128k,1024x31 (N, Nk = N x 1024, NxCOUNT for\n"
      "                   COUNT sequences of N): sets --batch to the count and --kv-seq to the\n"
      "                   longest; versions that take one length for all are skipped\n"
      "  --causal         bottom-right causal mask (default %s)\n"
      "  --block-size N   tokens per paged-cache block (default %d)\n"
      "\nrun:\n"
      "  --seed N         input seed (default 1)\n"
      "  --iters N        timed runs, the median is reported (default 20)\n"
      "  --warmup N       untimed runs first (default 3)\n"
      "  --check-only     check every version, time none\n"
      "  --no-check       time every version, check none\n"
      "  --cpu            run only the CPU parts (no GPU needed)\n"
      "  --csv FILE       also write the table as CSV\n"
      "  -h, --help       this text\n",
      d->causal ? "on" : "off", d->block_size);
  if (s->version_names) {
    fprintf(out, "\nversions:\n");
    for (int i = 0; i < s->n_versions; ++i) fprintf(out, "  %d  %s\n", i + 1, s->version_names[i]);
  }
  fprintf(out, "\nexit code: 0 all checks passed (or skipped), 1 a check failed, 2 bad input\n");
}

int attn_cli_parse(int argc, char **argv, const attn_cli_spec *spec, attn_options *o, char *err,
                   size_t err_len, FILE *out) {
  memset(o, 0, sizeof *o);
  o->problem = spec->defaults;
  o->seed = 1;
  o->iters = 20;
  o->warmup = 3;
  int have_kv_heads = 0, have_kv_seq = 0, have_batch = 0, n_lens = 0;
  err[0] = '\0';

  optind = 0; /* glibc: 0 re-initialises getopt completely */
  opterr = 0; /* our own one-line messages, not getopt's */
  for (;;) {
    int idx = -1;
    int c = getopt_long(argc, argv, ":h", kOptions, &idx);
    if (c == -1) break;
    const char *name = idx >= 0 ? kOptions[idx].name : NULL;
    long v = 0;
    switch (c) {
      case OPT_BATCH:
      case OPT_HEADS:
      case OPT_KV_HEADS:
      case OPT_SEQ:
      case OPT_KV_SEQ:
      case OPT_DIM:
      case OPT_BLOCK_SIZE:
        if (parse_int(optarg, 1, ATTN_MAX_EXTENT, &v) != 0)
          return fail(err, err_len, "--%s must be an integer in 1..%d, got '%s'", name,
                      ATTN_MAX_EXTENT, optarg);
        if (c == OPT_BATCH) o->problem.batch = (int)v, have_batch = 1;
        if (c == OPT_HEADS) o->problem.heads = (int)v;
        if (c == OPT_KV_HEADS) o->problem.kv_heads = (int)v, have_kv_heads = 1;
        if (c == OPT_SEQ) o->problem.seq_q = (int)v;
        if (c == OPT_KV_SEQ) o->problem.seq_kv = (int)v, have_kv_seq = 1;
        if (c == OPT_DIM) o->problem.dim = (int)v;
        if (c == OPT_BLOCK_SIZE) o->problem.block_size = (int)v;
        break;
      case OPT_CAUSAL:
        o->problem.causal = 1;
        break;
      case OPT_SEED:
        if (parse_u64(optarg, &o->seed) != 0)
          return fail(err, err_len, "--seed must be a non-negative integer, got '%s'", optarg);
        break;
      case OPT_ITERS:
        if (parse_int(optarg, 1, 100000, &v) != 0)
          return fail(err, err_len, "--iters must be an integer in 1..100000, got '%s'", optarg);
        o->iters = (int)v;
        break;
      case OPT_WARMUP:
        if (parse_int(optarg, 0, 10000, &v) != 0)
          return fail(err, err_len, "--warmup must be an integer in 0..10000, got '%s'", optarg);
        o->warmup = (int)v;
        break;
      case OPT_CHECK_ONLY:
        o->check_only = 1;
        break;
      case OPT_NO_CHECK:
        o->no_check = 1;
        break;
      case OPT_CPU:
        o->cpu_only = 1;
        break;
      case OPT_CSV:
        if (!optarg || !*optarg) return fail(err, err_len, "--csv needs a file name");
        o->csv_path = optarg;
        break;
      case OPT_KV_LENS:
        if ((n_lens = parse_kv_lens(optarg, o->kv_lens, err, err_len)) < 0) return ATTN_CLI_ERROR;
        break;
      case OPT_HELP:
        attn_cli_usage(spec, out);
        return ATTN_CLI_HELP;
      case ':':
        return fail(err, err_len, "option '%s' needs a value (see --help)", argv[optind - 1]);
      default:
        return fail(err, err_len, "unknown option '%s' (see --help)", argv[optind - 1]);
    }
  }
  if (o->check_only && o->no_check)
    return fail(err, err_len, "--check-only and --no-check exclude each other");
  if (optind < argc) {
    if (argc - optind > 1)
      return fail(err, err_len, "one VERSION at most, got '%s' and '%s'", argv[optind],
                  argv[optind + 1]);
    long v = 0;
    if (parse_int(argv[optind], 1, spec->n_versions, &v) != 0)
      return fail(err, err_len, "VERSION must be a number in 1..%d, got '%s'", spec->n_versions,
                  argv[optind]);
    o->version = (int)v;
  }
  if (!have_kv_heads && spec->defaults.kv_heads == 0) o->problem.kv_heads = o->problem.heads;
  if (!have_kv_seq && spec->defaults.seq_kv == 0) o->problem.seq_kv = o->problem.seq_q;
  if (n_lens > 0) {
    if (have_batch && o->problem.batch != n_lens)
      return fail(err, err_len, "--batch %d but --kv-lens gives %d lengths (it sets the batch)",
                  o->problem.batch, n_lens);
    if (have_kv_seq)
      return fail(err, err_len,
                  "--kv-seq and --kv-lens exclude each other (the longest length "
                  "is the --kv-seq)");
    int longest = 0;
    for (int b = 0; b < n_lens; ++b) longest = o->kv_lens[b] > longest ? o->kv_lens[b] : longest;
    o->problem.batch = n_lens;
    o->problem.seq_kv = longest;
    o->problem.kv_lens = o->kv_lens;
  }
  if (attn_problem_validate(&o->problem, spec->dims, spec->n_dims, err, err_len) != 0)
    return ATTN_CLI_ERROR;
  return ATTN_CLI_OK;
}

void attn_problem_print(const attn_problem *p, FILE *f) {
  fprintf(f, "batch %d  heads %d/%d  seq %d/%d  dim %d  %s  scale %.4g", p->batch, p->heads,
          p->kv_heads, p->seq_q, p->seq_kv, p->dim, p->causal ? "causal" : "full", attn_scale(p));
  if (p->kv_lens) {
    char lens[256];
    fprintf(f, "  kv lens %s", attn_kv_lens_str(p, lens, sizeof lens));
  }
}
