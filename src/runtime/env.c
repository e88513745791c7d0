#include "runtime/env.h"

#include <stdlib.h>
#include <string.h>

static const char *const base[] = {
    "PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/workspace", "LANG=C.UTF-8", "TMPDIR=/tmp",
    "USER=sandbox", "PYTHONDONTWRITEBYTECODE=1", NULL,
};

static size_t key_len(const char *kv) {
  const char *eq = strchr(kv, '=');
  return eq ? (size_t)(eq - kv) : strlen(kv);
}

/* Is the variable of kv set again by a later entry of list (from `from`)? */
static bool overridden(const char *kv, const char *const *from) {
  size_t kl = key_len(kv);
  for (const char *const *x = from; x && *x; x++)
    if (key_len(*x) == kl && strncmp(*x, kv, kl) == 0)
      return true;
  return false;
}

char **cr_env_build(const char *const *extra, bool session) {
  const char *mode = session ? "CORRAL_SESSION=1" : "MPLBACKEND=Agg";
  size_t n = sizeof base / sizeof *base + 1;
  for (const char *const *e = extra; e && *e; e++)
    n++;
  char **env = calloc(n + 1, sizeof *env);
  if (!env)
    return NULL;
  size_t k = 0;
  for (const char *const *e = base; *e; e++)
    if (!overridden(*e, extra) && !(env[k++] = strdup(*e)))
      goto oom;
  if (!overridden(mode, extra) && !(env[k++] = strdup(mode)))
    goto oom;
  for (const char *const *x = extra; x && *x; x++)
    if (!overridden(*x, x + 1) && !(env[k++] = strdup(*x)))
      goto oom;
  return env;
oom:
  cr_env_free(env);
  return NULL;
}

void cr_env_free(char **env) {
  for (char **e = env; e && *e; e++)
    free(*e);
  free(env);
}
