/* Progress lines for long CPU work. See attn_progress.h. */
#define _POSIX_C_SOURCE 200809L
#include "attn_progress.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double seconds_now(void) {
  struct timespec ts;
  timespec_get(&ts, TIME_UTC);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void attn_progress_begin(attn_progress *pr, const char *label, const char *unit, double total) {
  memset(pr, 0, sizeof *pr);
  pr->label = label;
  pr->unit = unit;
  pr->total = total;
  pr->t0 = seconds_now();
  pr->last = pr->t0;
  pr->min_seconds = 2.0;
  pr->out = stderr;
  const char *env = getenv("ATTN_PROGRESS");
  if (env && *env)
    pr->enabled = strcmp(env, "0") != 0;
  else
    pr->enabled = isatty(fileno(stderr));
}

void attn_progress_update(attn_progress *pr, double done) {
  if (!pr->enabled || pr->total <= 0 || done <= 0) return;
  const double now = seconds_now(), spent = now - pr->t0;
  if (pr->printed && now - pr->last < 0.5) return;
  const double projected = spent * pr->total / done;
  if (projected <= pr->min_seconds) return;
  const double left = projected - spent > 0 ? projected - spent : 0.0;
  fprintf(pr->out, "\r%s: %3.0f%% (%.0f of %.0f %s), about %.0f s left   ", pr->label,
          100.0 * done / pr->total, done, pr->total, pr->unit, left);
  fflush(pr->out);
  pr->printed = 1;
  pr->last = now;
}

void attn_progress_end(attn_progress *pr) {
  if (!pr->printed) return;
  fprintf(pr->out, "\r%s: done, %.0f %s in %.1f s%*s\n", pr->label, pr->total, pr->unit,
          seconds_now() - pr->t0, 20, "");
  fflush(pr->out);
  pr->printed = 0;
}
