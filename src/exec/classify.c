/* Reading an uncaught error out of the tail of stderr. The parsers work on a
 * cleaned copy of the text split into lines; each language's locator only
 * finds where the error is printed, and a separate step decides what it means,
 * so a bash script that ran python or node can weigh all three and keep the
 * error printed last. */
#include "exec/classify.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The caps the header promises; the hint gets room for a package list. */
#define NAME_CAP 128
#define MESSAGE_CAP 1024
#define HINT_CAP 2048
/* A fallback hint quotes the last stderr line only when it is this short: a
 * long line is more noise than help in one sentence. */
#define QUOTE_CAP 200
/* A module name quoted in a hint; real ones are far shorter. */
#define MODULE_CAP 128

/* ---------------------------------------------------------------- spans -- */

typedef struct span {
  const char *s;
  size_t n;
} span;

static span sp_of(const char *s) {
  span r = {s, s ? strlen(s) : 0};
  return r;
}

static span sp_sub(span a, size_t from, size_t len) {
  if (from > a.n)
    from = a.n;
  if (len > a.n - from)
    len = a.n - from;
  span r = {a.s + from, len};
  return r;
}

static span sp_from(span a, size_t from) { return sp_sub(a, from, (size_t)-1); }

static bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}
static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static bool is_ident(char c) { return is_alpha(c) || is_digit(c) || c == '_'; }

static char lower(char c) { return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c; }

static span sp_trim(span a) {
  while (a.n && is_space(a.s[0])) {
    a.s++;
    a.n--;
  }
  while (a.n && is_space(a.s[a.n - 1]))
    a.n--;
  return a;
}

static span sp_ltrim(span a) {
  while (a.n && is_space(a.s[0])) {
    a.s++;
    a.n--;
  }
  return a;
}

static bool sp_starts(span a, const char *prefix) {
  size_t k = strlen(prefix);
  return a.n >= k && memcmp(a.s, prefix, k) == 0;
}

static bool sp_ends(span a, const char *suffix) {
  size_t k = strlen(suffix);
  return a.n >= k && memcmp(a.s + a.n - k, suffix, k) == 0;
}

static bool sp_eq(span a, const char *z) { return a.n == strlen(z) && memcmp(a.s, z, a.n) == 0; }

/* Offset of needle in a, or -1. */
static long sp_find(span a, const char *needle) {
  size_t k = strlen(needle);
  if (k == 0)
    return 0;
  const char *p = a.n ? memmem(a.s, a.n, needle, k) : NULL;
  return p ? (long)(p - a.s) : -1;
}

static bool sp_has(span a, const char *needle) { return sp_find(a, needle) >= 0; }

static bool sp_has_any(span a, const char *const *needles) {
  for (size_t i = 0; needles[i]; i++)
    if (sp_has(a, needles[i]))
      return true;
  return false;
}

/* "x" out of "... 'x' ...": the text between the first quote after the start
 * of `after` and the next quote; an empty span when there is none. */
static span quoted_after(span a, const char *after) {
  span none = {NULL, 0};
  long at = sp_find(a, after);
  if (at < 0)
    return none;
  span rest = sp_from(a, (size_t)at + strlen(after));
  rest = sp_ltrim(rest);
  if (!rest.n || (rest.s[0] != '\'' && rest.s[0] != '"'))
    return none;
  char q = rest.s[0];
  const char *end = memchr(rest.s + 1, q, rest.n - 1);
  if (!end)
    return none;
  span r = {rest.s + 1, (size_t)(end - rest.s - 1)};
  return r;
}

/* ------------------------------------------------------------- UTF-8 ----- */

/* Length of the well-formed UTF-8 sequence at p (n bytes available), or 0.
 * NUL counts as malformed: everything produced here is a C string. */
static size_t utf8_seq(const unsigned char *p, size_t n) {
  unsigned char c = p[0];
  if (c == 0)
    return 0;
  if (c < 0x80)
    return 1;
  size_t len;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0)
      lo = 0xA0; /* overlong */
    else if (c == 0xED)
      hi = 0x9F; /* surrogates */
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0)
      lo = 0x90; /* overlong */
    else if (c == 0xF4)
      hi = 0x8F; /* above U+10FFFF */
  } else {
    return 0;
  }
  if (n < len || p[1] < lo || p[1] > hi)
    return 0;
  for (size_t i = 2; i < len; i++)
    if (p[i] < 0x80 || p[i] > 0xBF)
      return 0;
  return len;
}

/* A NUL-terminated copy of s[0..n) that is valid UTF-8 with no NULs inside
 * (each bad byte becomes U+FFFD), at most cap bytes long, cut between
 * characters. NULL on ENOMEM. */
static char *utf8_clean(const char *s, size_t n, size_t cap) {
  if (n > (SIZE_MAX - 1) / 3)
    return NULL;
  size_t room = n * 3 < cap ? n * 3 : cap;
  char *out = malloc(room + 1);
  if (!out)
    return NULL;
  size_t o = 0;
  for (size_t i = 0; i < n;) {
    size_t k = utf8_seq((const unsigned char *)s + i, n - i);
    const char *src = k ? s + i : "\xEF\xBF\xBD";
    size_t m = k ? k : 3;
    if (o + m > room)
      break;
    memcpy(out + o, src, m);
    o += m;
    i += k ? k : 1;
  }
  out[o] = '\0';
  return out;
}

/* ------------------------------------------------------ string builder --- */

/* Errors stick, so a chain of appends checks once at the end. */
typedef struct sbuf {
  char *p;
  size_t len, cap;
  bool oom;
} sbuf;

static void sb_add(sbuf *b, const char *s, size_t n) {
  if (b->oom)
    return;
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 128;
    while (cap < b->len + n + 1)
      cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
      b->oom = true;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
}

static void sb_addf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_addf(sbuf *b, const char *fmt, ...) {
  char small[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) {
    b->oom = true;
    return;
  }
  if ((size_t)n < sizeof small) {
    sb_add(b, small, (size_t)n);
    return;
  }
  char *big = malloc((size_t)n + 1);
  if (!big) {
    b->oom = true;
    return;
  }
  va_start(ap, fmt);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  va_end(ap);
  sb_add(b, big, (size_t)n);
  free(big);
}

/* ------------------------------------------------------------- output ---- */

void cr_error_info_free(cr_error_info *e) {
  if (!e)
    return;
  free(e->name);
  free(e->message);
  free(e->hint);
  memset(e, 0, sizeof *e);
}

/* Fill *out; the hint is taken from a builder and freed here either way. */
static int emit(cr_error_info *out, cr_category cat, span name, span msg, bool retryable,
                sbuf *hint) {
  name = sp_trim(name);
  msg = sp_trim(msg);
  out->category = cat;
  out->retryable = retryable;
  out->name = utf8_clean(name.s ? name.s : "", name.n, NAME_CAP);
  out->message = utf8_clean(msg.s ? msg.s : "", msg.n, MESSAGE_CAP);
  out->hint = hint->oom ? NULL : utf8_clean(hint->p ? hint->p : "", hint->len, HINT_CAP);
  free(hint->p);
  memset(hint, 0, sizeof *hint);
  if (!out->name || !out->message || !out->hint) {
    cr_error_info_free(out);
    errno = ENOMEM;
    return -1;
  }
  return 0;
}

const char *cr_category_name(cr_category c) {
  static const char *const names[] = {
      [CR_CAT_NONE] = "none",
      [CR_CAT_SYNTAX] = "syntax_error",
      [CR_CAT_RUNTIME] = "runtime_error",
      [CR_CAT_MODULE] = "module_not_found",
      [CR_CAT_TIMEOUT] = "timeout",
      [CR_CAT_MEMORY] = "memory_limit",
      [CR_CAT_OUTPUT] = "output_limit",
      [CR_CAT_PERMISSION] = "permission_denied",
      [CR_CAT_NETWORK] = "network_blocked",
      [CR_CAT_SANDBOX] = "sandbox_error",
  };
  if ((unsigned)c >= sizeof names / sizeof names[0] || !names[c])
    return "none";
  return names[c];
}

/* --------------------------------------------------------------- lines --- */

typedef struct lines {
  char *text; /* cleaned copy of the input */
  span *v;
  size_t n;
} lines;

static void lines_free(lines *l) {
  free(l->text);
  free(l->v);
  memset(l, 0, sizeof *l);
}

static int lines_split(const char *s, size_t n, lines *out) {
  memset(out, 0, sizeof *out);
  out->text = utf8_clean(s ? s : "", s ? n : 0, SIZE_MAX);
  if (!out->text)
    return -1;
  size_t len = strlen(out->text), count = 1;
  for (size_t i = 0; i < len; i++)
    count += out->text[i] == '\n';
  out->v = calloc(count, sizeof *out->v);
  if (!out->v) {
    lines_free(out);
    return -1;
  }
  const char *p = out->text, *end = out->text + len;
  while (p < end || (p == end && out->n == 0)) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *stop = nl ? nl : end;
    span l = {p, (size_t)(stop - p)};
    if (l.n && l.s[l.n - 1] == '\r')
      l.n--;
    out->v[out->n++] = l;
    if (!nl)
      break;
    p = nl + 1;
  }
  return 0;
}

/* The installed-package list holds name (case-insensitively, with '-' and
 * '_' alike, as package indexes compare names). */
static bool list_has(span list, span name) {
  size_t i = 0;
  while (i < list.n) {
    size_t j = i;
    while (j < list.n && list.s[j] != ',')
      j++;
    span item = sp_trim(sp_sub(list, i, j - i));
    if (item.n == name.n) {
      size_t k = 0;
      for (; k < item.n; k++) {
        char a = lower(item.s[k]), b = lower(name.s[k]);
        if (a == '-')
          a = '_';
        if (b == '-')
          b = '_';
        if (a != b)
          break;
      }
      if (k == item.n)
        return true;
    }
    i = j + 1;
  }
  return false;
}

static void hint_not_installed(sbuf *h, span module, span installed, const char *fallback) {
  sb_addf(h, "'%.*s' is not installed in this sandbox and there is no network to install it; ",
          (int)module.n, module.s);
  if (installed.n)
    sb_addf(h, "use %s or one of the installed packages: %.*s.", fallback, (int)installed.n,
            installed.s);
  else
    sb_addf(h, "use %s instead.", fallback);
}

/* ------------------------------------------------------------- python ---- */

/* A line of only carets: Python and node mark the offending column so. */
static bool caret_line(span l) {
  span t = sp_trim(l);
  if (!t.n)
    return false;
  for (size_t i = 0; i < t.n; i++)
    if (t.s[i] != '^')
      return false;
  return true;
}


typedef struct py_exc {
  bool found;
  size_t line;  /* index of the exception line */
  size_t start; /* first line of its block (traceback header or File line) */
  span name, msg;
  span loc;     /* 'File "...", line N' of the innermost frame, if any */
  span user_loc; /* the innermost frame in the program's own code, if any */
} py_exc;

/* A frame in an installed library or the interpreter, not the program's
 * own code ("/workspace/x.py", "<string>", "<cell-3>", "<stdin>"). */
static bool py_library_frame(span loc) {
  return sp_starts(loc, "File \"/usr/") || sp_has(loc, "-packages/") ||
         sp_starts(loc, "File \"<frozen");
}

/* "pkg.mod.Name: message" or a bare "Name". */
static bool py_exc_line(span l, span *name, span *msg) {
  size_t i = 0;
  bool want = true; /* at the start of an identifier */
  while (i < l.n) {
    char c = l.s[i];
    if (want) {
      if (!is_alpha(c) && c != '_')
        return false;
      want = false;
    } else if (c == '.') {
      want = true;
    } else if (!is_ident(c)) {
      break;
    }
    i++;
  }
  if (want)
    return false;
  *name = sp_sub(l, 0, i);
  if (i == l.n) {
    *msg = sp_sub(l, i, 0);
    return true;
  }
  if (l.s[i] == ':' && (i + 1 == l.n || l.s[i + 1] == ' ')) {
    *msg = sp_trim(sp_from(l, i + 1));
    return true;
  }
  return false;
}

/* 'File "x", line N' out of '  File "x", line N, in f'. */
static span py_frame_loc(span l) {
  span t = sp_ltrim(l);
  long at = sp_find(t, "\", line ");
  if (at < 0)
    return sp_sub(t, 0, 0);
  size_t end = (size_t)at + strlen("\", line ");
  while (end < t.n && is_digit(t.s[end]))
    end++;
  return sp_sub(t, 0, end);
}

/* A traceback is a header (or, for a file that does not compile, a bare
 * 'File' line) followed by indented frame lines and ended by the first line
 * at column 0, which is the exception. The last one printed wins: chained
 * exceptions print the cause first. Warnings are "file:N: Category: text" at
 * column 0 outside any block, and are skipped. */
static void py_locate(const lines *t, py_exc *e) {
  memset(e, 0, sizeof *e);
  bool in_block = false, ignored = false, pending_ignore = false, group = false;
  size_t start = 0;
  span loc = {NULL, 0}, user_loc = {NULL, 0};
  for (size_t i = 0; i < t->n; i++) {
    span l = t->v[i];
    /* An exception group draws its top level behind "  | ". */
    if (group && sp_starts(l, "  | "))
      l = sp_from(l, 4);
    bool header = sp_starts(l, "Traceback (most recent call last):");
    if (sp_starts(sp_ltrim(l), "+ Exception Group Traceback (most recent call last):")) {
      group = true;
      header = true;
    }
    bool frame = sp_starts(l, "  File \"");
    if (header || (frame && !in_block)) {
      in_block = true;
      start = i;
      loc = sp_sub(l, 0, 0);
      user_loc = sp_sub(l, 0, 0);
      /* What Python prints after "Exception ignored in" happened during
       * cleanup and did not make the program fail. */
      ignored = pending_ignore;
      pending_ignore = false;
    }
    if (frame) {
      loc = py_frame_loc(l);
      if (loc.n && !py_library_frame(loc))
        user_loc = loc;
    }
    if (header || frame || l.n == 0 || is_space(l.s[0]))
      continue;
    if (sp_starts(l, "Exception ignored in")) {
      pending_ignore = true;
      in_block = false;
      continue;
    }
    if (!in_block)
      continue;
    in_block = false;
    span name, msg;
    if (!ignored && py_exc_line(l, &name, &msg)) {
      e->found = true;
      e->line = i;
      e->start = start;
      e->name = name;
      e->msg = msg;
      e->loc = loc;
      e->user_loc = user_loc;
    }
    ignored = false;
  }
}

/* Last component of a dotted name: "socket.gaierror" -> "gaierror". */
static span base_name(span name) {
  for (size_t i = name.n; i > 0; i--)
    if (name.s[i - 1] == '.')
      return sp_from(name, i);
  return name;
}

static const char *const py_net_texts[] = {
    "Name or service not known",
    "Temporary failure in name resolution",
    "No address associated with hostname",
    "Network is unreachable",
    "No route to host",
    "Connection refused",
    "Failed to establish a new connection",
    "Failed to resolve",
    "Max retries exceeded with url",
    "[Errno -2]",
    "[Errno -3]",
    "[Errno -5]",
    "[Errno 101]",
    "[Errno 111]",
    "[Errno 113]",
    NULL,
};

static const char *const py_perm_texts[] = {
    "[Errno 1]", "[Errno 13]", "[Errno 30]", "Read-only file system", NULL,
};

/* Frames in these files mean the failing call was a network one, so an EPERM
 * there is the sandbox's network wall, not a file permission. */
static const char *const py_net_frames[] = {
    "socket.py\"", "/http/client.py\"", "/urllib/", "/urllib3/", "/requests/", "/httpx/", NULL,
};

static const char *const perm_hint =
    "Writes are allowed only in /workspace (the working directory) and /tmp; write files there.";
static const char *const net_hint =
    "The sandbox has no network access; use data that is already in /workspace instead of "
    "downloading it.";

static int py_classify(const lines *t, const py_exc *e, span installed, cr_error_info *out) {
  sbuf h = {0};
  span base = base_name(e->name);
  span msg = e->msg;
  span block = {t->v[e->start].s, (size_t)(t->v[e->line].s + t->v[e->line].n - t->v[e->start].s)};

  if (sp_eq(base, "SyntaxError") || sp_eq(base, "IndentationError") ||
      sp_eq(base, "TabError")) {
    bool caret = false;
    for (size_t i = e->start; i < e->line && !caret; i++)
      caret = caret_line(t->v[i]);
    sb_addf(&h, "The code does not compile: fix the %.*s", (int)base.n, base.s);
    if (e->loc.n)
      sb_addf(&h, " at %.*s", (int)e->loc.n, e->loc.s);
    if (caret)
      sb_addf(&h, " (the caret in stderr marks the spot)");
    sb_addf(&h, " and run it again.");
    return emit(out, CR_CAT_SYNTAX, e->name, msg, true, &h);
  }

  span module = quoted_after(msg, "No module named");
  if (sp_eq(base, "ModuleNotFoundError") || (sp_eq(base, "ImportError") && module.n)) {
    if (module.n > MODULE_CAP)
      module.n = MODULE_CAP;
    long dot = sp_find(module, ".");
    span top = dot > 0 ? sp_sub(module, 0, (size_t)dot) : module;
    if (!module.n)
      sb_addf(&h, "A module could not be imported; check the name, and use the standard library "
                  "or an installed package.");
    else if (dot > 0 && list_has(installed, top))
      sb_addf(&h, "'%.*s' is installed but has no module '%.*s'; check the module name for the "
                  "installed version.",
              (int)top.n, top.s, (int)module.n, module.s);
    else
      hint_not_installed(&h, module, installed, "the standard library");
    return emit(out, CR_CAT_MODULE, e->name, msg, true, &h);
  }

  if (sp_eq(base, "MemoryError")) {
    sb_addf(&h, "The program ran out of memory; reduce memory use (process data in chunks, use "
                "smaller dtypes, avoid building huge lists).");
    return emit(out, CR_CAT_MEMORY, e->name, msg, false, &h);
  }

  bool net_name = sp_eq(base, "gaierror") || sp_eq(base, "herror") ||
                  sp_eq(base, "ConnectionRefusedError") ||
                  sp_eq(base, "NameResolutionError") || sp_eq(base, "NewConnectionError");
  bool perm = sp_eq(base, "PermissionError") || sp_has_any(msg, py_perm_texts);
  if (net_name || sp_has_any(msg, py_net_texts) ||
      (perm && sp_has_any(block, py_net_frames))) {
    sb_addf(&h, "%s", net_hint);
    return emit(out, CR_CAT_NETWORK, e->name, msg, false, &h);
  }
  if (perm) {
    sb_addf(&h, "%s", perm_hint);
    return emit(out, CR_CAT_PERMISSION, e->name, msg, false, &h);
  }

  if (sp_eq(base, "KeyboardInterrupt")) {
    sb_addf(&h, "The program was interrupted (SIGINT) before it finished; this is not an error "
                "in the code.");
    return emit(out, CR_CAT_RUNTIME, e->name, msg, false, &h);
  }

  if (sp_eq(base, "NameError")) {
    span var = quoted_after(msg, "name");
    if (var.n)
      sb_addf(&h, "Define or import '%.*s' before using it, and check its spelling.",
              (int)var.n, var.s);
    else
      sb_addf(&h, "Define or import the name before using it, and check its spelling.");
  } else if (sp_eq(base, "ImportError")) {
    sb_addf(&h, "The module is installed but does not have that name; check the name for the "
                "installed version.");
  } else if (sp_eq(base, "FileNotFoundError")) {
    sb_addf(&h, "The path does not exist; the program's files are in /workspace (the working "
                "directory), so list it and fix the path.");
  } else if (sp_eq(base, "RecursionError")) {
    sb_addf(&h, "The recursion went too deep; use an iterative algorithm or a smaller input.");
  } else if (e->loc.n && e->user_loc.n && e->user_loc.s != e->loc.s) {
    /* Raised inside a library: where the program called into it is what
     * to fix. */
    sb_addf(&h, "Read the traceback: the error was raised inside a library, called from the "
                "program at %.*s; fix the call or the data it passed.",
            (int)e->user_loc.n, e->user_loc.s);
  } else if (e->loc.n) {
    sb_addf(&h, "Read the traceback (the error was raised at %.*s) and fix the code.",
            (int)e->loc.n, e->loc.s);
  } else {
    sb_addf(&h, "Read the traceback and fix the code.");
  }
  return emit(out, CR_CAT_RUNTIME, e->name, msg, true, &h);
}

/* --------------------------------------------------------------- node ---- */

enum { NODE_ERROR = 1, NODE_THROWN, NODE_OOM };

typedef struct node_exc {
  int kind;     /* 0 when nothing was found */
  size_t line;
  span name, msg;
  span loc;     /* "file:N" of the code frame printed above the error */
  bool strong;  /* confirmed by a stack or the "Node.js v" footer */
} node_exc;

/* "Name: message", "Error [CODE]: message" or a bare "Name", where Name looks
 * like an error class. */
static bool node_err_line(span l, span *name, span *msg, bool *bare) {
  size_t i = 0;
  if (!l.n || !(is_alpha(l.s[0]) || l.s[0] == '_' || l.s[0] == '$'))
    return false;
  while (i < l.n && (is_ident(l.s[i]) || l.s[i] == '$'))
    i++;
  span id = sp_sub(l, 0, i);
  if (!sp_ends(id, "Error") && !sp_ends(id, "Exception") &&
      !sp_eq(id, "UnhandledPromiseRejection"))
    return false;
  if (i + 2 < l.n && l.s[i] == ' ' && l.s[i + 1] == '[') {
    size_t j = i + 2;
    while (j < l.n && (is_ident(l.s[j]) || l.s[j] == '-'))
      j++;
    if (j == l.n || l.s[j] != ']' || j == i + 2)
      return false;
    i = j + 1;
  }
  *name = sp_sub(l, 0, i);
  *bare = i == l.n;
  if (*bare) {
    *msg = sp_sub(l, i, 0);
    return true;
  }
  if (l.s[i] == ':' && (i + 1 == l.n || l.s[i + 1] == ' ')) {
    *msg = sp_trim(sp_from(l, i + 1));
    return true;
  }
  return false;
}

/* The first line of a code frame: "/path/file.js:12", "[eval]:1". */
static bool node_frame_loc(span l) {
  if (!l.n || is_space(l.s[0]))
    return false;
  size_t i = l.n;
  while (i > 0 && is_digit(l.s[i - 1]))
    i--;
  if (i == l.n || i < 2 || l.s[i - 1] != ':')
    return false;
  for (size_t k = 0; k < i; k++)
    if (l.s[k] == ' ')
      return false;
  return true;
}

/* Node prints a code frame, then "Name: message", then the stack ("    at
 * ..."), properties, and "Node.js vX". A line counts once a stack follows
 * it, so an Error the program logged earlier and an error-looking line of a
 * multi-line message lose to the one that actually ended the program. */
static void node_locate(const lines *t, node_exc *e) {
  memset(e, 0, sizeof *e);
  node_exc last = {0};
  size_t frame = (size_t)-1, footer = (size_t)-1;
  for (size_t i = 0; i < t->n; i++) {
    span l = t->v[i];
    if (sp_starts(l, "FATAL ERROR:") &&
        (sp_has(l, "heap out of memory") || sp_has(l, "Allocation failed"))) {
      e->kind = NODE_OOM;
      e->line = i;
      e->name = sp_of("HeapOutOfMemory");
      e->msg = sp_trim(sp_from(l, strlen("FATAL ERROR:")));
      e->strong = true;
      return;
    }
    if (sp_starts(l, "Node.js v")) {
      footer = i;
      /* The footer vouches for an error printed without a stack only when
       * nothing but its properties stands between them. */
      bool adjacent = last.kind != 0;
      for (size_t k = last.line + 1; adjacent && k < i; k++) {
        span m = t->v[k];
        adjacent = !m.n || is_space(m.s[0]) || m.s[0] == '}';
      }
      if (adjacent) {
        last.strong = true;
        *e = last;
      }
      continue;
    }
    if (sp_starts(l, "    at ")) {
      if (last.kind) {
        last.strong = true;
        *e = last;
      }
      continue;
    }
    if (node_frame_loc(l) && !sp_starts(l, "node:"))
      frame = i;
    span name, msg;
    bool bare = false;
    span cand = l;
    if (sp_starts(cand, "Uncaught "))
      cand = sp_from(cand, strlen("Uncaught "));
    if (node_err_line(cand, &name, &msg, &bare)) {
      memset(&last, 0, sizeof last);
      /* A bare class name is only an error once a stack confirms it. */
      if (!bare || (i + 1 < t->n && sp_starts(t->v[i + 1], "    at "))) {
        last.kind = NODE_ERROR;
        last.line = i;
        last.name = name;
        last.msg = msg;
        if (frame != (size_t)-1 && i - frame <= 5)
          last.loc = t->v[frame];
      }
    } else if (sp_starts(l, "Uncaught ")) {
      memset(&last, 0, sizeof last);
      last.kind = NODE_THROWN;
      last.line = i;
      last.name = sp_of("Uncaught");
      last.msg = sp_from(l, strlen("Uncaught "));
    }
  }
  if (e->kind)
    return;
  /* `throw "text"` or a thrown object: no class, just the value after the
   * code frame's caret line (and before Node's advice, if printed). It beats
   * an unconfirmed error line printed before it, which the program logged. */
  size_t caret = (size_t)-1;
  for (size_t i = 0; footer != (size_t)-1 && i < footer; i++)
    if (caret_line(t->v[i]))
      caret = i;
  if (caret != (size_t)-1 && (!last.kind || caret > last.line)) {
    for (size_t i = caret + 1; i < footer; i++) {
      if (!sp_trim(t->v[i]).n)
        continue;
      e->kind = NODE_THROWN;
      e->line = i;
      e->name = sp_of("Uncaught");
      e->msg = t->v[i];
      e->strong = true;
      if (frame != (size_t)-1 && frame < caret)
        e->loc = t->v[frame];
      return;
    }
  }
  if (last.kind)
    *e = last;
}

static const char *const node_net_codes[] = {
    "ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ENETUNREACH", "EHOSTUNREACH", "EAI_NONAME", NULL,
};
static const char *const node_perm_codes[] = {"EACCES", "EPERM", "EROFS", NULL};
static const char *const node_net_syscalls[] = {
    "syscall: 'connect'", "syscall: 'socket'", "syscall: 'getaddrinfo'", NULL,
};

/* Package part of a module specifier: "lodash/fp" -> "lodash",
 * "@scope/pkg/x" -> "@scope/pkg". */
static span node_package(span spec) {
  size_t slashes = spec.n && spec.s[0] == '@' ? 2 : 1;
  for (size_t i = 0; i < spec.n; i++)
    if (spec.s[i] == '/' && --slashes == 0)
      return sp_sub(spec, 0, i);
  return spec;
}

static int node_classify(const lines *t, const node_exc *e, span installed, cr_error_info *out) {
  sbuf h = {0};
  if (e->kind == NODE_OOM) {
    sb_addf(&h, "The JavaScript heap ran out of memory; reduce memory use (process data in "
                "chunks or streams, avoid holding everything in arrays).");
    return emit(out, CR_CAT_MEMORY, e->name, e->msg, false, &h);
  }
  if (e->kind == NODE_THROWN) {
    sb_addf(&h, "The program threw a value that is not an Error and nothing caught it");
    if (e->loc.n)
      sb_addf(&h, " (at %.*s)", (int)e->loc.n, e->loc.s);
    sb_addf(&h, "; fix the condition that throws it, or catch it.");
    return emit(out, CR_CAT_RUNTIME, e->name, e->msg, true, &h);
  }

  /* The error line through the end: the stack, "code: 'X'" properties and
   * any [cause] that says what really failed (fetch hides ENOTFOUND there). */
  const char *end = t->v[t->n - 1].s + t->v[t->n - 1].n;
  span region = {t->v[e->line].s, (size_t)(end - t->v[e->line].s)};
  span msg = e->msg;

  span spec = quoted_after(msg, "Cannot find module");
  if (!spec.n)
    spec = quoted_after(msg, "Cannot find package");
  if (spec.n || sp_has(e->name, "ERR_MODULE_NOT_FOUND") ||
      sp_has(region, "code: 'MODULE_NOT_FOUND'")) {
    if (spec.n > MODULE_CAP)
      spec.n = MODULE_CAP;
    if (!spec.n)
      sb_addf(&h, "A module could not be found; check the name, and use Node's built-in "
                  "modules or an installed package.");
    else if (spec.s[0] == '.' || spec.s[0] == '/' || sp_starts(spec, "file:"))
      sb_addf(&h, "The file '%.*s' does not exist; check the path (the program's files are in "
                  "/workspace, the working directory).",
              (int)spec.n, spec.s);
    else
      hint_not_installed(&h, node_package(spec), installed, "Node's built-in modules");
    return emit(out, CR_CAT_MODULE, e->name, msg, true, &h);
  }

  bool perm = sp_has_any(msg, node_perm_codes) || sp_has(region, "code: 'EACCES'") ||
              sp_has(region, "code: 'EPERM'") || sp_has(region, "code: 'EROFS'");
  if (sp_has_any(region, node_net_codes) ||
      (perm && (sp_starts(msg, "connect ") || sp_has_any(region, node_net_syscalls)))) {
    sb_addf(&h, "%s", net_hint);
    return emit(out, CR_CAT_NETWORK, e->name, msg, false, &h);
  }
  if (perm) {
    sb_addf(&h, "%s", perm_hint);
    return emit(out, CR_CAT_PERMISSION, e->name, msg, false, &h);
  }

  /* JSON.parse throws SyntaxError too, about the data, not the code. */
  if (sp_eq(e->name, "SyntaxError") &&
      (sp_has(msg, " in JSON at position") || sp_has(msg, "is not valid JSON") ||
       sp_has(msg, "end of JSON input") || sp_has(region, "at JSON.parse"))) {
    sb_addf(&h, "JSON.parse was given text that is not valid JSON: the code parses; check the "
                "data (print the start of it) before parsing it.");
    return emit(out, CR_CAT_RUNTIME, e->name, msg, true, &h);
  }
  if (sp_eq(e->name, "SyntaxError")) {
    if (e->loc.n)
      sb_addf(&h, "The code does not parse: fix the syntax at %.*s (the caret in stderr marks "
                  "the spot) and run it again.",
              (int)e->loc.n, e->loc.s);
    else
      sb_addf(&h, "The code does not parse: fix the syntax error and run it again.");
    return emit(out, CR_CAT_SYNTAX, e->name, msg, true, &h);
  }

  if (sp_eq(e->name, "ReferenceError") && sp_ends(msg, " is not defined")) {
    span var = sp_sub(msg, 0, msg.n - strlen(" is not defined"));
    sb_addf(&h, "Define or import '%.*s' before using it, and check its spelling.", (int)var.n,
            var.s);
  } else if (sp_eq(e->name, "UnhandledPromiseRejection")) {
    sb_addf(&h, "A promise was rejected and nothing handled it; await it inside try/catch or "
                "add .catch(), and fix the cause of the rejection.");
  } else if (e->loc.n) {
    sb_addf(&h, "Read the stack trace (the error was thrown at %.*s) and fix the code.",
            (int)e->loc.n, e->loc.s);
  } else {
    sb_addf(&h, "Read the stack trace and fix the code.");
  }
  return emit(out, CR_CAT_RUNTIME, e->name, msg, true, &h);
}

/* --------------------------------------------------------------- bash ---- */

enum { BASH_SYNTAX = 1, BASH_NOT_FOUND, BASH_PERM, BASH_ROFS, BASH_NET, BASH_NOFILE };

typedef struct bash_hit {
  int kind;   /* 0 when nothing was found */
  size_t line;
  span msg;   /* the line without "script: line N: " */
  span loc;   /* "script: line N" */
} bash_hit;

static const char *const bash_net_texts[] = {
    "Could not resolve host",
    "Temporary failure in name resolution",
    "Name or service not known",
    "unable to resolve host address",
    "Network is unreachable",
    "No route to host",
    "Connection refused",
    "Failed to connect to",
    NULL,
};

static void bash_strip(span l, span *loc, span *rest) {
  long at = sp_find(l, ": line ");
  *loc = sp_sub(l, 0, 0);
  *rest = l;
  if (at < 0)
    return;
  size_t i = (size_t)at + strlen(": line ");
  size_t d = i;
  while (i < l.n && is_digit(l.s[i]))
    i++;
  if (i == d || !sp_starts(sp_from(l, i), ": "))
    return;
  *loc = sp_sub(l, 0, i);
  *rest = sp_from(l, i + 2);
}

/* Bash stops at a syntax error, so the first one is the cause; otherwise the
 * last recognizable complaint is the nearest to the exit. */
static void bash_locate(const lines *t, bash_hit *b) {
  memset(b, 0, sizeof *b);
  for (size_t i = 0; i < t->n; i++) {
    span loc, rest;
    bash_strip(t->v[i], &loc, &rest);
    int kind = 0;
    if (sp_starts(rest, "syntax error") || sp_has(rest, "unexpected EOF while looking for"))
      kind = BASH_SYNTAX;
    else if (sp_ends(rest, ": command not found"))
      kind = BASH_NOT_FOUND;
    else if (sp_has_any(rest, bash_net_texts))
      kind = BASH_NET;
    else if (sp_has(rest, "Read-only file system"))
      kind = BASH_ROFS;
    else if (sp_has(rest, "Permission denied") || sp_has(rest, "Operation not permitted"))
      kind = BASH_PERM;
    else if (sp_ends(rest, "No such file or directory"))
      kind = BASH_NOFILE;
    if (!kind)
      continue;
    b->kind = kind;
    b->line = i;
    b->msg = rest;
    b->loc = loc;
    if (kind == BASH_SYNTAX)
      return;
  }
}

static int bash_classify(const bash_hit *b, cr_error_info *out) {
  sbuf h = {0};
  switch (b->kind) {
  case BASH_SYNTAX:
    if (b->loc.n)
      sb_addf(&h, "The script does not parse: fix the syntax at %.*s and run it again.",
              (int)b->loc.n, b->loc.s);
    else
      sb_addf(&h, "The script does not parse: fix the syntax error and run it again.");
    return emit(out, CR_CAT_SYNTAX, sp_of("SyntaxError"), b->msg, true, &h);
  case BASH_NOT_FOUND: {
    span cmd = sp_sub(b->msg, 0, b->msg.n - strlen(": command not found"));
    sb_addf(&h, "'%.*s' is not available in this sandbox; check the spelling or use a command "
                "that is installed.",
            (int)cmd.n, cmd.s);
    return emit(out, CR_CAT_RUNTIME, sp_of("CommandNotFound"), b->msg, true, &h);
  }
  case BASH_NET:
    sb_addf(&h, "%s", net_hint);
    return emit(out, CR_CAT_NETWORK, sp_of("NetworkError"), b->msg, false, &h);
  case BASH_ROFS:
    sb_addf(&h, "%s", perm_hint);
    return emit(out, CR_CAT_PERMISSION, sp_of("ReadOnlyFileSystem"), b->msg, false, &h);
  case BASH_PERM:
    sb_addf(&h, "%s", perm_hint);
    return emit(out, CR_CAT_PERMISSION, sp_of("PermissionDenied"), b->msg, false, &h);
  default:
    sb_addf(&h, "The path does not exist; the program's files are in /workspace (the working "
                "directory), so list it and fix the path.");
    return emit(out, CR_CAT_RUNTIME, sp_of("FileNotFound"), b->msg, true, &h);
  }
}

/* ----------------------------------------------------------- fallback ---- */

static const char *const signal_names[] = {
    [SIGHUP] = "SIGHUP",   [SIGINT] = "SIGINT",       [SIGQUIT] = "SIGQUIT",
    [SIGILL] = "SIGILL",   [SIGTRAP] = "SIGTRAP",     [SIGABRT] = "SIGABRT",
    [SIGBUS] = "SIGBUS",   [SIGFPE] = "SIGFPE",       [SIGKILL] = "SIGKILL",
    [SIGUSR1] = "SIGUSR1", [SIGSEGV] = "SIGSEGV",     [SIGUSR2] = "SIGUSR2",
    [SIGPIPE] = "SIGPIPE", [SIGALRM] = "SIGALRM",     [SIGTERM] = "SIGTERM",
    [SIGCHLD] = "SIGCHLD", [SIGCONT] = "SIGCONT",     [SIGSTOP] = "SIGSTOP",
    [SIGTSTP] = "SIGTSTP", [SIGTTIN] = "SIGTTIN",     [SIGTTOU] = "SIGTTOU",
    [SIGURG] = "SIGURG",   [SIGXCPU] = "SIGXCPU",     [SIGXFSZ] = "SIGXFSZ",
    [SIGVTALRM] = "SIGVTALRM", [SIGPROF] = "SIGPROF", [SIGWINCH] = "SIGWINCH",
    [SIGIO] = "SIGIO",     [SIGSYS] = "SIGSYS",
};

static void signal_name(int sig, char *buf, size_t size) {
  if (sig > 0 && (size_t)sig < sizeof signal_names / sizeof signal_names[0] && signal_names[sig])
    snprintf(buf, size, "%s", signal_names[sig]);
  else if (sig >= SIGRTMIN && sig <= SIGRTMAX)
    snprintf(buf, size, "SIGRTMIN+%d", sig - SIGRTMIN);
  else
    snprintf(buf, size, "SIG%d", sig);
}

static span last_nonempty(const lines *t) {
  for (size_t i = t->n; i > 0; i--) {
    span l = sp_trim(t->v[i - 1]);
    if (l.n)
      return l;
  }
  span none = {NULL, 0};
  return none;
}

static int fallback(const cr_classify_input *in, const lines *t, cr_error_info *out) {
  sbuf h = {0};
  char msg[96], sig[32];
  span last = last_nonempty(t);
  bool quote = last.n && last.n <= QUOTE_CAP;
  cr_category cat = CR_CAT_RUNTIME;
  bool retryable = true;

  if (in->signal > 0) {
    signal_name(in->signal, sig, sizeof sig);
    snprintf(msg, sizeof msg, "killed by signal %s (%d)", sig, in->signal);
    switch (in->signal) {
    case SIGSEGV:
    case SIGBUS:
      sb_addf(&h, "The program crashed on a bad memory access, usually in native code (ctypes, "
                  "a C extension) or from recursion that overflowed the stack");
      break;
    case SIGABRT:
      sb_addf(&h, "The program aborted, usually on a failed check inside native code");
      break;
    case SIGFPE:
      sb_addf(&h, "The program hit an arithmetic fault in native code (such as an integer "
                  "division by zero)");
      break;
    case SIGKILL:
      /* The sandbox's own memory limit is reported before this (the
       * cgroup's OOM count): this SIGKILL came from elsewhere. */
      sb_addf(&h, "The program was killed with SIGKILL, not by the sandbox's memory limit: it "
                  "may have killed itself or a process it depends on, or the host ran out of "
                  "memory");
      break;
    case SIGXCPU:
      cat = CR_CAT_TIMEOUT;
      sb_addf(&h, "The program used up its CPU-time limit; make it faster (a better algorithm or "
                  "a smaller input)");
      break;
    case SIGSYS:
      /* The seccomp filter kills on forbidden system calls: a wall, not a bug. */
      cat = CR_CAT_PERMISSION;
      retryable = false;
      sb_addf(&h, "The program made a system call that this sandbox forbids, so that operation "
                  "is not available here");
      break;
    default:
      sb_addf(&h, "The program was killed by %s", sig);
      break;
    }
    if (quote)
      sb_addf(&h, " (last line of stderr: \"%.*s\")", (int)last.n, last.s);
    sb_addf(&h, ".");
    return emit(out, cat, sp_of("Signal"), sp_of(msg), retryable, &h);
  }

  snprintf(msg, sizeof msg, "exited with code %d", in->exit_code);
  sb_addf(&h, "The program exited with code %d without a recognizable error", in->exit_code);
  /* Shells report a child killed by signal N as 128+N. */
  if (in->exit_code > 128 && in->exit_code < 128 + 65) {
    signal_name(in->exit_code - 128, sig, sizeof sig);
    sb_addf(&h, " (128+%d: a command was killed by %s)", in->exit_code - 128, sig);
  }
  if (quote)
    sb_addf(&h, "; last line of stderr: \"%.*s\"", (int)last.n, last.s);
  sb_addf(&h, "; check the code paths that exit with an error.");
  return emit(out, CR_CAT_RUNTIME, sp_of("ExitStatus"), sp_of(msg), true, &h);
}

/* -------------------------------------------------------------- entry ---- */

static bool lang_is(const char *lang, const char *const *names) {
  if (!lang)
    return false;
  for (size_t i = 0; names[i]; i++)
    if (strcmp(lang, names[i]) == 0)
      return true;
  return false;
}

static const char *const python_names[] = {"python", "python3", "py", NULL};
static const char *const node_names[] = {"node", "nodejs", "javascript", "js", NULL};

int cr_classify(const cr_classify_input *in, cr_error_info *out) {
  memset(out, 0, sizeof *out);
  lines t;
  if (lines_split(in->err_text, in->err_len, &t) < 0) {
    errno = ENOMEM;
    return -1;
  }
  char *installed_z = NULL;
  if (in->installed) {
    installed_z = utf8_clean(in->installed, strlen(in->installed), HINT_CAP);
    if (!installed_z) {
      lines_free(&t);
      errno = ENOMEM;
      return -1;
    }
  }
  span installed = sp_trim(sp_of(installed_z));

  bool python = lang_is(in->language, python_names);
  bool node = lang_is(in->language, node_names);
  bool shell = !python && !node;

  py_exc pe = {0};
  node_exc ne = {0};
  bash_hit bh = {0};
  if (python || shell)
    py_locate(&t, &pe);
  if (node || shell)
    node_locate(&t, &ne);
  if (shell)
    bash_locate(&t, &bh);
  /* From a shell, only an unmistakable node error counts. */
  if (shell && ne.kind && !ne.strong)
    ne.kind = 0;

  /* A signal other than SIGINT (Python turns that into KeyboardInterrupt)
   * means the program did not die of an error it printed; only node's heap
   * exhaustion, which aborts, says more than the signal does. */
  if (in->signal > 0 && in->signal != SIGINT) {
    pe.found = false;
    bh.kind = 0;
    if (ne.kind != NODE_OOM)
      ne.kind = 0;
  }

  /* The error printed last is the one that ended the program. */
  int which = 0;
  size_t at = 0;
  if (pe.found) {
    which = 1;
    at = pe.line;
  }
  if (ne.kind && (!which || ne.line >= at)) {
    which = 2;
    at = ne.line;
  }
  if (bh.kind && (!which || bh.line >= at))
    which = 3;

  int rc;
  if (which == 1)
    rc = py_classify(&t, &pe, installed, out);
  else if (which == 2)
    rc = node_classify(&t, &ne, installed, out);
  else if (which == 3)
    rc = bash_classify(&bh, out);
  else
    rc = fallback(in, &t, out);
  free(installed_z);
  lines_free(&t);
  return rc;
}

int cr_error_for_limit(cr_category category, const char *detail, cr_error_info *out) {
  memset(out, 0, sizeof *out);
  sbuf h = {0};
  const char *name, *def;
  bool retryable;
  switch (category) {
  case CR_CAT_TIMEOUT:
    name = "TimeLimitExceeded";
    def = "time limit exceeded";
    retryable = true;
    sb_addf(&h, "The program ran past its time limit; make it faster (a better algorithm or a "
                "smaller input), and if it waits for input, note that stdin is empty unless "
                "input is given.");
    break;
  case CR_CAT_MEMORY:
    name = "MemoryLimitExceeded";
    def = "memory limit exceeded";
    retryable = false;
    sb_addf(&h, "The program hit the memory limit; process the data in chunks, use smaller "
                "dtypes, or ask for a higher limit.");
    break;
  case CR_CAT_OUTPUT:
    name = "OutputLimitExceeded";
    def = "output limit exceeded";
    retryable = true;
    sb_addf(&h, "The output was cut at the output limit; print less (summaries, the head of the "
                "data).");
    break;
  case CR_CAT_SANDBOX:
    name = "SandboxError";
    def = "the sandbox failed";
    retryable = false;
    sb_addf(&h, "The sandbox failed before or around the program; this is not a problem in the "
                "code.");
    break;
  default:
    errno = EINVAL;
    return -1;
  }
  span msg = detail && *detail ? sp_of(detail) : sp_of(def);
  return emit(out, category, sp_of(name), msg, retryable, &h);
}
