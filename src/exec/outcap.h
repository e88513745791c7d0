/* Capture of one output stream with a cap: when a stream writes more than the
 * cap, the first half and the last half of the cap are kept and the bytes in
 * between are counted, so the traceback at the end of a flood survives. */
#ifndef CORRAL_EXEC_OUTCAP_H
#define CORRAL_EXEC_OUTCAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

typedef struct cr_outcap {
  size_t cap;        /* bytes kept at most (head + tail); >= 2 */
  cr_buf head;       /* the first min(total, cap/2 .. cap) bytes, see .c */
  char *ring;        /* the last bytes once the head is full: a ring of tail_cap */
  size_t tail_cap;   /* cap - cap/2 */
  size_t ring_pos;   /* next write position in ring */
  size_t ring_len;   /* valid bytes in ring (<= tail_cap) */
  uint64_t total;    /* every byte fed, kept or not */
} cr_outcap;

/* Returns 0 or -1 (ENOMEM). */
int cr_outcap_init(cr_outcap *c, size_t cap);
/* Feeds a chunk. Returns how many leading bytes of this chunk went into the
 * head (what a live stream may forward as-is), or -1 on ENOMEM. */
long cr_outcap_feed(cr_outcap *c, const char *p, size_t n);
bool cr_outcap_truncated(const cr_outcap *c);
uint64_t cr_outcap_dropped(const cr_outcap *c);
/* The kept text: everything when not truncated; otherwise head, then a marker
 * line "\n[... corral: N bytes dropped ...]\n", then tail. Caller frees.
 * *len receives the length (the text may contain NUL bytes). NULL on ENOMEM. */
char *cr_outcap_render(const cr_outcap *c, size_t *len);
/* Only the tail part (last bytes seen, up to tail_cap, or everything when not
 * truncated): what error classification reads. Caller frees. */
char *cr_outcap_tail(const cr_outcap *c, size_t *len);
void cr_outcap_free(cr_outcap *c);

#endif
