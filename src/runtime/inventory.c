#include "runtime/inventory.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* A hint is one sentence: past this many names the rest is a count. */
#define LIST_MAX 40

/* The libraries a data-analysis program most likely wanted: when they are
 * there, a model should see them first. */
static const char *const python_first[] = {"numpy", "pandas", "scipy", "matplotlib"};

typedef struct names {
  char **v;
  char **keys; /* what two names are compared by, to deduplicate */
  size_t n, cap;
} names;

static void names_free(names *s) {
  for (size_t i = 0; i < s->n; i++) {
    free(s->v[i]);
    free(s->keys[i]);
  }
  free(s->v);
  free(s->keys);
  memset(s, 0, sizeof *s);
}

/* Python project names compare case-insensitively with '-', '_' and '.'
 * alike (PEP 503): "PyYAML" from one directory and "pyyaml" from another are
 * one package. Node names are compared as they are. */
static char *make_key(const char *name, size_t len, bool python) {
  char *k = malloc(len + 1);
  if (!k)
    return NULL;
  for (size_t i = 0; i < len; i++) {
    char c = name[i];
    if (python) {
      if (c >= 'A' && c <= 'Z')
        c = (char)(c - 'A' + 'a');
      else if (c == '-' || c == '.')
        c = '_';
    }
    k[i] = c;
  }
  k[len] = '\0';
  return k;
}

/* Adds name[0..len) unless an equal one is there. Returns 0 or -1 (ENOMEM). */
static int names_add(names *s, const char *name, size_t len, bool python) {
  if (len == 0)
    return 0;
  char *key = make_key(name, len, python);
  if (!key)
    return -1;
  for (size_t i = 0; i < s->n; i++) {
    if (strcmp(s->keys[i], key) == 0) {
      free(key);
      return 0;
    }
  }
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 64;
    char **v = realloc(s->v, cap * sizeof *v);
    if (!v)
      goto oom;
    s->v = v;
    char **k = realloc(s->keys, cap * sizeof *k);
    if (!k)
      goto oom;
    s->keys = k;
    s->cap = cap;
  }
  char *copy = strndup(name, len);
  if (!copy)
    goto oom;
  s->v[s->n] = copy;
  s->keys[s->n] = key;
  s->n++;
  return 0;
oom:
  free(key);
  return -1;
}

static bool ends_with(const char *s, const char *suffix, size_t *stem) {
  size_t n = strlen(s), k = strlen(suffix);
  if (n <= k || strcmp(s + n - k, suffix) != 0)
    return false;
  *stem = n - k;
  return true;
}

/* Installed distributions leave "<name>-<version>.dist-info" (wheels) or
 * "<name>-<version>.egg-info" (Debian's own python3-* packages, numpy and
 * pandas among them; some without a version). Tools escape '-' in the name to
 * '_', but not all of them always did, so the name ends where a '-' is
 * followed by a digit. */
static size_t project_len(const char *stem, size_t n) {
  for (size_t i = 0; i + 1 < n; i++)
    if (stem[i] == '-' && stem[i + 1] >= '0' && stem[i + 1] <= '9')
      return i;
  return n;
}

static int scan_python(const char *dir, names *s) {
  DIR *d = opendir(dir);
  if (!d)
    return 0;
  int rc = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    size_t stem;
    if (de->d_name[0] == '.')
      continue;
    if (!ends_with(de->d_name, ".dist-info", &stem) && !ends_with(de->d_name, ".egg-info", &stem))
      continue;
    if (names_add(s, de->d_name, project_len(de->d_name, stem), true) < 0) {
      rc = -1;
      break;
    }
  }
  closedir(d);
  return rc;
}

/* Symlinked package directories are common (Debian links /usr/share/nodejs
 * entries), so a link counts when it leads to a directory. */
static bool is_dir_entry(int dfd, const struct dirent *de) {
  if (de->d_type == DT_DIR)
    return true;
  if (de->d_type != DT_LNK && de->d_type != DT_UNKNOWN)
    return false;
  struct stat st;
  return fstatat(dfd, de->d_name, &st, 0) == 0 && S_ISDIR(st.st_mode);
}

static int scan_node_scope(int dfd, const char *scope, names *s) {
  int fd = openat(dfd, scope, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  DIR *d = fdopendir(fd);
  if (!d) {
    close(fd);
    return 0;
  }
  int rc = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (de->d_name[0] == '.' || !is_dir_entry(fd, de))
      continue;
    char full[2 * sizeof de->d_name + 2];
    int n = snprintf(full, sizeof full, "%s/%s", scope, de->d_name);
    if (n < 0 || (size_t)n >= sizeof full)
      continue;
    if (names_add(s, full, (size_t)n, false) < 0) {
      rc = -1;
      break;
    }
  }
  closedir(d);
  return rc;
}

static int scan_node(const char *dir, names *s) {
  DIR *d = opendir(dir);
  if (!d)
    return 0;
  int dfd = dirfd(d);
  int rc = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    /* ".bin" and ".package-lock.json" are npm's bookkeeping. */
    if (de->d_name[0] == '.' || !is_dir_entry(dfd, de))
      continue;
    if (de->d_name[0] == '@')
      rc = scan_node_scope(dfd, de->d_name, s);
    else
      rc = names_add(s, de->d_name, strlen(de->d_name), false);
    if (rc < 0)
      break;
  }
  closedir(d);
  return rc;
}

static int cmp_name(const void *a, const void *b) {
  const char *x = *(const char *const *)a, *y = *(const char *const *)b;
  int c = strcasecmp(x, y);
  return c ? c : strcmp(x, y);
}

/* Moves the python_first names that are present to the front, in that order;
 * the rest keep their sorted order. */
static void python_promote(names *s) {
  size_t front = 0;
  for (size_t f = 0; f < sizeof python_first / sizeof python_first[0]; f++) {
    for (size_t i = front; i < s->n; i++) {
      if (strcasecmp(s->v[i], python_first[f]) != 0)
        continue;
      char *hit = s->v[i];
      memmove(s->v + front + 1, s->v + front, (i - front) * sizeof *s->v);
      s->v[front++] = hit;
      break;
    }
  }
}

static char *join(const names *s) {
  size_t shown = s->n < LIST_MAX ? s->n : LIST_MAX;
  size_t len = 64; /* ", and N more" and the NUL */
  for (size_t i = 0; i < shown; i++)
    len += strlen(s->v[i]) + 2;
  char *out = malloc(len);
  if (!out)
    return NULL;
  size_t o = 0;
  for (size_t i = 0; i < shown; i++) {
    size_t k = strlen(s->v[i]);
    if (i) {
      memcpy(out + o, ", ", 2);
      o += 2;
    }
    memcpy(out + o, s->v[i], k);
    o += k;
  }
  out[o] = '\0';
  if (s->n > shown)
    snprintf(out + o, len - o, ", and %zu more", s->n - shown);
  return out;
}

char *cr_inventory_from_dirs(const char *language, const char *const *dirs, size_t ndirs) {
  bool python = language && strcmp(language, "python") == 0;
  bool node = language && strcmp(language, "node") == 0;
  if (!python && !node) {
    errno = 0;
    return NULL;
  }
  names s = {0};
  for (size_t i = 0; i < ndirs; i++) {
    if (!dirs[i])
      continue;
    if ((python ? scan_python(dirs[i], &s) : scan_node(dirs[i], &s)) < 0) {
      names_free(&s);
      errno = ENOMEM;
      return NULL;
    }
  }
  if (s.n == 0) {
    names_free(&s);
    errno = 0;
    return NULL;
  }
  /* keys[] no longer lines up with v[] after this; it is only freed. */
  qsort(s.v, s.n, sizeof *s.v, cmp_name);
  if (python)
    python_promote(&s);
  char *out = join(&s);
  names_free(&s);
  errno = out ? 0 : ENOMEM;
  return out;
}

char *cr_inventory_packages(const char *language) {
  if (language && strcmp(language, "node") == 0) {
    static const char *const node_dirs[] = {
        "/usr/lib/node_modules",
        "/usr/local/lib/node_modules",
        "/usr/share/nodejs",
        "/usr/lib/nodejs",
    };
    return cr_inventory_from_dirs(language, node_dirs, sizeof node_dirs / sizeof node_dirs[0]);
  }
  if (!language || strcmp(language, "python") != 0)
    return cr_inventory_from_dirs(language, NULL, 0);

  /* Debian's python3 reads its own packages from /usr/lib/python3 and pip's
   * from /usr/local/lib/python3.X, whatever X is installed. */
  glob_t g;
  memset(&g, 0, sizeof g);
  int grc = glob("/usr/local/lib/python3*/dist-packages", GLOB_ONLYDIR, NULL, &g);
  if (grc == GLOB_NOSPACE) {
    globfree(&g);
    errno = ENOMEM;
    return NULL;
  }
  size_t nlocal = grc == 0 ? g.gl_pathc : 0;
  const char **dirs = calloc(nlocal + 1, sizeof *dirs);
  if (!dirs) {
    globfree(&g);
    errno = ENOMEM;
    return NULL;
  }
  dirs[0] = "/usr/lib/python3/dist-packages";
  for (size_t i = 0; i < nlocal; i++)
    dirs[i + 1] = g.gl_pathv[i];
  char *out = cr_inventory_from_dirs(language, dirs, nlocal + 1);
  int saved = errno;
  free(dirs);
  globfree(&g);
  errno = saved;
  return out;
}
