/* Languages: which interpreter runs a snippet, under which file name. The
 * session drivers (a later layer) live here too. */
#ifndef CORRAL_RUNTIME_H
#define CORRAL_RUNTIME_H

#include <stddef.h>

typedef struct cr_runtime {
  const char *name;                 /* "python", "node", "bash" */
  const char *ext;                  /* default file extension, no dot */
  const char *const *interpreters;  /* candidate absolute paths, first that exists wins */
  const char *const *aliases;       /* other names accepted for the language */
  const char *const *extensions;    /* file extensions that select it */
} cr_runtime;

/* By name or alias (case-insensitive); NULL if unknown. */
const cr_runtime *cr_runtime_find(const char *name);
/* By a file name's extension; NULL if none matches. */
const cr_runtime *cr_runtime_for_file(const char *filename);
/* "python, node, bash": for error messages. */
const char *cr_runtime_list(void);
/* The interpreter's path (same inside the sandbox: /usr is bound as is), or
 * NULL when it is not installed. */
const char *cr_runtime_interpreter(const cr_runtime *rt);
/* The file name a snippet is written to ("main.py"; node code with ES module
 * syntax gets "main.mjs"). */
const char *cr_runtime_code_name(const cr_runtime *rt, const char *code, size_t len);

/* A session driver (docs/session-protocol.md): the files placed read-only
 * in the sandbox's root and the arguments after the interpreter. */
typedef struct cr_driver_file {
  const char *path;               /* relative to the sandbox's root: ".corral/driver.py" */
  const unsigned char *data;
  size_t len;
} cr_driver_file;

typedef struct cr_driver {
  const char *args[4];            /* after the interpreter, NULL-terminated */
  const cr_driver_file *files;
  size_t nfiles;
} cr_driver;

/* The driver of a language; never NULL for the three built-in ones. */
const cr_driver *cr_runtime_driver(const cr_runtime *rt);

#endif
