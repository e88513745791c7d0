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

/* Decode the escapes a person types on a command line: \n \t \r \\ \0 (and a
 * lone backslash before any other character stays as is). Caller frees. */
char *cr_unescape(const char *s, size_t *out_len);

#endif
