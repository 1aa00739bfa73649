/**
 * @file attn_progress.h
 * @brief A progress line with an estimate, for CPU work that would otherwise sit silent.
 *
 * The reference of a big problem, or a CPU model at a large shape, can take minutes. A loop that
 * may run long calls attn_progress_update() as it goes; once the work is projected to take more
 * than min_seconds (2 s unless changed), a line such as `reference: 41% (2210 of 5376 rows), about
 * 7 s left` is rewritten in place on stderr. It is printed only when stderr is a terminal (or the
 * environment sets ATTN_PROGRESS=1), so logs and test output stay clean.
 */
#ifndef ATTN_PROGRESS_H
#define ATTN_PROGRESS_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/** One long piece of CPU work. */
typedef struct attn_progress {
  const char *label;  /**< what is being done, e.g. "reference" */
  const char *unit;   /**< what is counted, e.g. "rows" */
  double total;       /**< units in all */
  double t0;          /**< start, seconds */
  double last;        /**< last time a line was printed, seconds */
  double min_seconds; /**< print only when the projected total exceeds this */
  int enabled;        /**< 1 when lines may be printed */
  int printed;        /**< 1 once a line was printed (end() then closes it) */
  FILE *out;          /**< where lines go (stderr) */
} attn_progress;

/** Start: record the time; enabled when stderr is a terminal or ATTN_PROGRESS=1 (ATTN_PROGRESS=0
 *  turns it off). */
void attn_progress_begin(attn_progress *pr, const char *label, const char *unit, double total);

/** @p done units are finished. Prints at most every half second, and only once the projected
 *  duration exceeds min_seconds. Safe to call often; call it from one thread. */
void attn_progress_update(attn_progress *pr, double done);

/** Finish: closes the line with the time taken, if one was printed. */
void attn_progress_end(attn_progress *pr);

#ifdef __cplusplus
}
#endif

#endif /* ATTN_PROGRESS_H */
