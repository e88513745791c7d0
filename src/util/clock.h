/* The monotonic clock in seconds, for deadlines and durations. */
#ifndef CORRAL_UTIL_CLOCK_H
#define CORRAL_UTIL_CLOCK_H

#include <time.h>

static inline double cr_now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

#endif
