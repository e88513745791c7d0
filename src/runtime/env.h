/* The environment a sandboxed program gets: built from nothing (the host's
 * variables, API keys included, never reach it), then the caller's. */
#ifndef CORRAL_RUNTIME_ENV_H
#define CORRAL_RUNTIME_ENV_H

#include <stdbool.h>

/* PATH, HOME=/workspace, LANG, TMPDIR, USER, PYTHONDONTWRITEBYTECODE; a
 * one-shot run adds MPLBACKEND=Agg (sessions route figures through their
 * driver), a session CORRAL_SESSION=1. Then `extra` ("KEY=VALUE"; a later
 * entry wins over an earlier one and over the base). A NULL-terminated,
 * malloc'd array of malloc'd strings, or NULL on ENOMEM. */
char **cr_env_build(const char *const *extra, bool session);
void cr_env_free(char **env);

#endif
