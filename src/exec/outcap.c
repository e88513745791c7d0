/* Output capture with a cap.
 *
 * Layout. Everything lives in one allocation, head.data, that never grows
 * beyond cap + 1 bytes, so a stream costs at most cap + 1 bytes however much
 * it writes:
 *
 *  - While total <= cap the stream is kept verbatim in head (head.len ==
 *    total), because a stream that fits must come back unchanged; deciding
 *    early which half is "head" would only be needed once it overflows.
 *  - The first time total exceeds cap, head[0, cap/2) becomes the head for
 *    good and head[cap/2, cap) is the oldest part of the tail. That part is
 *    shifted one byte to the right, to [cap/2 + 1, cap + 1), so that
 *    head.data[cap/2] can hold the NUL that cr_buf promises after head.len,
 *    and ring points at head.data + cap/2 + 1: a full ring of tail_cap bytes,
 *    oldest byte at ring_pos. From then on ring_len == tail_cap and every new
 *    byte overwrites the oldest one.
 *
 * The one-off shift costs cap/2 bytes, paid once a stream has written more
 * than cap, so feeding stays O(1) amortised per byte. head grows
 * geometrically (clamped to cap + 1) so small outputs stay small and feed
 * allocates O(log cap) times over a stream's whole life, never per call. */
#include "exec/outcap.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MARKER_MAX 64

int cr_outcap_init(cr_outcap *c, size_t cap) {
  memset(c, 0, sizeof *c);
  /* Below 2 there is no room for both a head and a tail; above LONG_MAX the
   * head count could not be returned by feed. */
  if (cap < 2 || cap > (size_t)LONG_MAX - 1) {
    errno = EINVAL;
    return -1;
  }
  c->cap = cap;
  c->tail_cap = cap - cap / 2;
  return 0;
}

bool cr_outcap_truncated(const cr_outcap *c) { return c->total > c->cap; }

uint64_t cr_outcap_dropped(const cr_outcap *c) {
  return cr_outcap_truncated(c) ? c->total - c->cap : 0;
}

/* Room for `need` bytes in head, never more than cap + 1 in all. Not
 * cr_buf_reserve: its doubling could reach twice the cap. */
static int head_reserve(cr_outcap *c, size_t need) {
  if (need + 1 <= c->head.cap)
    return 0;
  size_t ncap = c->head.cap ? c->head.cap : 256;
  while (ncap < need + 1 && ncap <= c->cap)
    ncap *= 2;
  if (ncap > c->cap + 1)
    ncap = c->cap + 1;
  char *p = realloc(c->head.data, ncap);
  if (!p) {
    errno = ENOMEM;
    return -1;
  }
  c->head.data = p;
  c->head.cap = ncap;
  return 0;
}

static void ring_write(cr_outcap *c, const char *p, size_t n) {
  if (n >= c->tail_cap) {
    memcpy(c->ring, p + (n - c->tail_cap), c->tail_cap);
    c->ring_pos = 0;
    return;
  }
  size_t first = c->tail_cap - c->ring_pos;
  if (first > n)
    first = n;
  memcpy(c->ring + c->ring_pos, p, first);
  memcpy(c->ring, p + first, n - first);
  c->ring_pos = (c->ring_pos + n) % c->tail_cap;
}

long cr_outcap_feed(cr_outcap *c, const char *p, size_t n) {
  size_t head_cap = c->cap / 2;
  long to_head = 0;
  if (c->total < head_cap) {
    uint64_t room = head_cap - c->total;
    to_head = (long)(n < room ? n : room);
  }
  if (n == 0)
    return 0;

  size_t off = 0;
  if (!cr_outcap_truncated(c)) {
    size_t room = c->cap - c->head.len;
    size_t take = n < room ? n : room;
    if (head_reserve(c, c->head.len + take) < 0)
      return -1;
    memcpy(c->head.data + c->head.len, p, take);
    c->head.len += take;
    c->head.data[c->head.len] = '\0';
    off = take;
    if (off < n) {
      /* First overflow: head.len == cap here, and cap + 1 bytes are
       * allocated, so the shift below stays inside the buffer. */
      memmove(c->head.data + head_cap + 1, c->head.data + head_cap, c->tail_cap);
      c->head.len = head_cap;
      c->head.data[head_cap] = '\0';
      c->ring = c->head.data + head_cap + 1;
      c->ring_pos = 0;
      c->ring_len = c->tail_cap;
    }
  }
  if (off < n)
    ring_write(c, p + off, n - off);
  c->total += n;
  return to_head;
}

/* Appends the tail in order (oldest first) at dst; returns bytes written. */
static size_t copy_ring(const cr_outcap *c, char *dst) {
  size_t first = c->ring_len - c->ring_pos;
  memcpy(dst, c->ring + c->ring_pos, first);
  memcpy(dst + first, c->ring, c->ring_pos);
  return c->ring_len;
}

static char *copy_head(const cr_outcap *c, size_t *len) {
  char *out = malloc(c->head.len + 1);
  if (!out) {
    errno = ENOMEM;
    return NULL;
  }
  if (c->head.len)
    memcpy(out, c->head.data, c->head.len);
  out[c->head.len] = '\0';
  if (len)
    *len = c->head.len;
  return out;
}

char *cr_outcap_render(const cr_outcap *c, size_t *len) {
  if (!cr_outcap_truncated(c))
    return copy_head(c, len);
  char marker[MARKER_MAX];
  int m = snprintf(marker, sizeof marker, "\n[... corral: %" PRIu64 " bytes dropped ...]\n",
                   cr_outcap_dropped(c));
  size_t mlen = (size_t)m;
  size_t total = c->head.len + mlen + c->ring_len;
  char *out = malloc(total + 1);
  if (!out) {
    errno = ENOMEM;
    return NULL;
  }
  memcpy(out, c->head.data, c->head.len);
  memcpy(out + c->head.len, marker, mlen);
  copy_ring(c, out + c->head.len + mlen);
  out[total] = '\0';
  if (len)
    *len = total;
  return out;
}

char *cr_outcap_tail(const cr_outcap *c, size_t *len) {
  if (!cr_outcap_truncated(c))
    return copy_head(c, len);
  char *out = malloc(c->ring_len + 1);
  if (!out) {
    errno = ENOMEM;
    return NULL;
  }
  copy_ring(c, out);
  out[c->ring_len] = '\0';
  if (len)
    *len = c->ring_len;
  return out;
}

void cr_outcap_free(cr_outcap *c) {
  /* ring points into head.data (see the top of this file): one free. */
  cr_buf_free(&c->head);
  c->ring = NULL;
  c->ring_pos = c->ring_len = 0;
  c->total = 0;
}
