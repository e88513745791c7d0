/* Turning a failed program into an error an LLM can act on: read the last
 * lines of stderr the way the language prints an uncaught error, and say which
 * category it is, whether changing the code can help, and a one-sentence hint.
 * Pure functions: no I/O, so they can be unit-tested on captured texts. */
#ifndef CORRAL_EXEC_CLASSIFY_H
#define CORRAL_EXEC_CLASSIFY_H

#include <stdbool.h>
#include <stddef.h>

typedef enum cr_category {
  CR_CAT_NONE = 0,
  CR_CAT_SYNTAX,          /* "syntax_error" */
  CR_CAT_RUNTIME,         /* "runtime_error" */
  CR_CAT_MODULE,          /* "module_not_found" */
  CR_CAT_TIMEOUT,         /* "timeout" */
  CR_CAT_MEMORY,          /* "memory_limit" */
  CR_CAT_OUTPUT,          /* "output_limit" */
  CR_CAT_PERMISSION,      /* "permission_denied" */
  CR_CAT_NETWORK,         /* "network_blocked" */
  CR_CAT_SANDBOX,         /* "sandbox_error" */
} cr_category;

/* The JSON name of a category ("syntax_error", ...); "none" for CR_CAT_NONE. */
const char *cr_category_name(cr_category c);

typedef struct cr_error_info {
  cr_category category;
  char *name;       /* e.g. "ModuleNotFoundError", "ReferenceError", "ExitStatus"; malloc'd */
  char *message;    /* e.g. "No module named 'sympy'"; malloc'd */
  bool retryable;   /* true when changing the code can help */
  char *hint;       /* one sentence for a model; malloc'd */
} cr_error_info;

typedef struct cr_classify_input {
  const char *language;      /* "python" | "node" | "bash" */
  const char *err_text;      /* the tail of stderr (may contain invalid UTF-8, NULs) */
  size_t err_len;
  int exit_code;             /* valid when signal == 0 */
  int signal;                /* signal that killed the program, 0 if it exited */
  /* Third-party packages installed for this language, comma separated, used in
   * the module_not_found hint ("numpy, pandas, scipy, matplotlib, ..."); may be
   * NULL. */
  const char *installed;
} cr_classify_input;

/* Classify a program that exited non-zero or was killed by a signal (not a
 * limit the supervisor enforced: those the caller builds with
 * cr_error_for_limit). Always fills *out with something useful: when no
 * known error shape is found, category runtime_error with name "ExitStatus"
 * (or "Signal") and a message naming the code or signal.
 * Returns 0, or -1 on ENOMEM. */
int cr_classify(const cr_classify_input *in, cr_error_info *out);

/* The error object for a limit the supervisor enforced or a sandbox failure:
 * category is one of CR_CAT_TIMEOUT, CR_CAT_MEMORY, CR_CAT_OUTPUT,
 * CR_CAT_SANDBOX; detail is a short text the caller composes with the numbers
 * (e.g. "wall-clock limit of 2 s exceeded"), used as the message.
 * Returns 0, or -1 on ENOMEM. */
int cr_error_for_limit(cr_category category, const char *detail, cr_error_info *out);

void cr_error_info_free(cr_error_info *e);

#endif
