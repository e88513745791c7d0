/* Expected-output comparison the way judges do it: trailing white space
 * (spaces, tabs, \r) at the end of each line is ignored, and so are trailing
 * empty lines / white space at the end of the whole output. Everything else,
 * leading white space included, must match exactly. */
#ifndef CORRAL_EXEC_EXPECT_H
#define CORRAL_EXEC_EXPECT_H

#include <stdbool.h>
#include <stddef.h>

typedef struct cr_expect_diff {
  size_t line;          /* 1-based line number of the first difference */
  char expected[128];   /* that line as expected (rstripped, cut to fit, "" past the end) */
  char actual[128];     /* that line as produced */
  bool expected_eof;    /* the expected text has no such line */
  bool actual_eof;      /* the output has no such line */
} cr_expect_diff;

/* true when they match; on mismatch, fills *diff (may be NULL). */
bool cr_expect_match(const char *out, size_t out_len, const char *exp, size_t exp_len,
                     cr_expect_diff *diff);

/* The same comparison fed with the output as it comes, in chunks of any
 * size, in constant memory: the whole output is compared even when only its
 * head and tail are kept (an output over the kept limit can still be right).
 * The expected text must stay alive until cr_expect_stream_end. */
typedef struct cr_expect_stream {
  const char *exp_end;
  const char *ep;                /* expected lines: cursor */
  bool e_done;
  const char *e;                 /* the expected line for the current line, if have_e */
  size_t elen;
  bool have_e;
  size_t lineno;                 /* 1-based number of the current line */
  /* the current output line */
  size_t p, k;                   /* matched bytes of e; blanks pending after them */
  bool ok, ws_ok, nonblank;
  char prefix[128];              /* its first bytes, for the diff */
  size_t plen;
  bool any;                      /* the current line has any byte */
  /* the verdict so far */
  bool failed;                   /* a confirmed difference is in diff */
  bool tentative;                /* an empty line differs: real if a nonblank line follows */
  cr_expect_diff diff, tdiff;
  /* the expected line after the last nonblank output line */
  const char *after_e;
  size_t after_elen;
  bool after_have;
  size_t last_nonblank;          /* line number of the last nonblank output line */
} cr_expect_stream;

void cr_expect_stream_init(cr_expect_stream *s, const char *exp, size_t exp_len);
void cr_expect_stream_feed(cr_expect_stream *s, const char *p, size_t n);
/* The verdict, as cr_expect_match's. */
bool cr_expect_stream_end(cr_expect_stream *s, cr_expect_diff *diff);

/* Decode the escapes a person types on a command line: \n \t \r \\ \0 (and a
 * lone backslash before any other character stays as is). Caller frees. */
char *cr_unescape(const char *s, size_t *out_len);

#endif
