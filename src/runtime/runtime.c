#include "runtime/runtime.h"

#include <stdbool.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "drivers_embedded.h"

static const char *const py_interp[] = {"/usr/bin/python3", "/usr/local/bin/python3", NULL};
static const char *const py_alias[] = {"py", "python3", NULL};
static const char *const py_ext[] = {"py", NULL};
static const char *const js_interp[] = {"/usr/bin/node", "/usr/bin/nodejs", "/usr/local/bin/node",
                                        NULL};
static const char *const js_alias[] = {"js", "javascript", "nodejs", NULL};
static const char *const js_ext[] = {"js", "mjs", "cjs", NULL};
static const char *const sh_interp[] = {"/usr/bin/bash", "/bin/bash", NULL};
static const char *const sh_alias[] = {"sh", "shell", NULL};
static const char *const sh_ext[] = {"sh", "bash", NULL};

static const cr_runtime runtimes[] = {
    {"python", "py", py_interp, py_alias, py_ext},
    {"node", "js", js_interp, js_alias, js_ext},
    {"bash", "sh", sh_interp, sh_alias, sh_ext},
};

const cr_runtime *cr_runtime_find(const char *name) {
  if (!name)
    return NULL;
  for (size_t i = 0; i < sizeof runtimes / sizeof *runtimes; i++) {
    if (strcasecmp(name, runtimes[i].name) == 0)
      return &runtimes[i];
    for (const char *const *a = runtimes[i].aliases; *a; a++)
      if (strcasecmp(name, *a) == 0)
        return &runtimes[i];
  }
  return NULL;
}

const cr_runtime *cr_runtime_for_file(const char *filename) {
  const char *dot = filename ? strrchr(filename, '.') : NULL;
  if (!dot || strchr(dot, '/'))
    return NULL;
  for (size_t i = 0; i < sizeof runtimes / sizeof *runtimes; i++)
    for (const char *const *e = runtimes[i].extensions; *e; e++)
      if (strcasecmp(dot + 1, *e) == 0)
        return &runtimes[i];
  return NULL;
}

const char *cr_runtime_list(void) { return "python, node, bash"; }

const char *cr_runtime_interpreter(const cr_runtime *rt) {
  for (const char *const *p = rt->interpreters; *p; p++)
    if (access(*p, X_OK) == 0)
      return *p;
  return NULL;
}

/* Does this line start with an ES module statement (import/export)? */
static bool esm_line(const char *p, const char *end) {
  while (p < end && (*p == ' ' || *p == '\t'))
    p++;
  size_t n = (size_t)(end - p);
  if (n > 7 && strncmp(p, "import", 6) == 0 && (p[6] == ' ' || p[6] == '{' || p[6] == '*'))
    return true;
  if (n > 7 && strncmp(p, "export", 6) == 0 && (p[6] == ' ' || p[6] == '{' || p[6] == '*'))
    return true;
  return false;
}

const char *cr_runtime_code_name(const cr_runtime *rt, const char *code, size_t len) {
  if (strcmp(rt->name, "python") == 0)
    return "main.py";
  if (strcmp(rt->name, "bash") == 0)
    return "main.sh";
  const char *p = code, *end = code + len;
  while (p && p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *le = nl ? nl : end;
    if (esm_line(p, le))
      return "main.mjs";
    p = nl ? nl + 1 : NULL;
  }
  return "main.js";
}

static const cr_driver_file py_files[] = {
    {".corral/driver.py", cr_embed_driver_py, sizeof cr_embed_driver_py - 1},
    {".corral/corral_mpl.py", cr_embed_corral_mpl_py, sizeof cr_embed_corral_mpl_py - 1},
};
static const cr_driver_file js_files[] = {
    {".corral/driver.js", cr_embed_driver_js, sizeof cr_embed_driver_js - 1},
};
static const cr_driver_file sh_files[] = {
    {".corral/driver.sh", cr_embed_driver_sh, sizeof cr_embed_driver_sh - 1},
};
/* -u: unbuffered streams, so a cell's prints reach the supervisor as they
 * happen. */
static const cr_driver py_driver = {{"-u", "/.corral/driver.py", NULL}, py_files, 2};
static const cr_driver js_driver = {{"--expose-internals", "/.corral/driver.js", NULL}, js_files, 1};
static const cr_driver sh_driver = {{"/.corral/driver.sh", NULL}, sh_files, 1};

const cr_driver *cr_runtime_driver(const cr_runtime *rt) {
  if (strcmp(rt->name, "python") == 0)
    return &py_driver;
  if (strcmp(rt->name, "node") == 0)
    return &js_driver;
  return &sh_driver;
}
