/* The session manager: ids, a server-wide maximum, idle TTLs, a lifetime
 * cap, and a reaper thread that closes what expired. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "session/session.h"
#include "util/clock.h"

typedef struct entry {
  char id[40];
  char *owner;       /* NULL: no tenant */
  cr_session *s;
  double created, last_used, ttl;
  double wall_created, wall_last;   /* Unix time for callers */
  unsigned long executions;
  int refs;          /* borrowers */
  bool closing;      /* closed as soon as refs drops to 0 */
  struct entry *next;
} entry;

struct cr_session_mgr {
  cr_mgr_opts o;
  pthread_mutex_t lock;
  pthread_cond_t cv;
  entry *head;
  size_t count;       /* open or opening */
  bool stopping;
  pthread_t reaper;
  bool reaper_started;
};


static double wall_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static bool owner_ok(const entry *e, const char *owner) {
  if (!e->owner || !owner)
    return e->owner == NULL || owner == NULL;
  return strcmp(e->owner, owner) == 0;
}

static void entry_free(entry *e) {
  cr_session_close(e->s);
  free(e->owner);
  free(e);
}

void cr_mgr_opts_init(cr_mgr_opts *o) {
  o->max_sessions = 64;
  o->default_ttl_s = 600;
  o->max_lifetime_s = 86400;
  o->reap_interval_s = 1;
}

static void *reaper_main(void *arg) {
  cr_session_mgr *m = arg;
  pthread_mutex_lock(&m->lock);
  while (!m->stopping) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    double w = m->o.reap_interval_s;
    ts.tv_sec += (time_t)w;
    ts.tv_nsec += (long)((w - (double)(time_t)w) * 1e9);
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&m->cv, &m->lock, &ts);
    if (m->stopping)
      break;
    pthread_mutex_unlock(&m->lock);
    cr_mgr_reap(m);
    pthread_mutex_lock(&m->lock);
  }
  pthread_mutex_unlock(&m->lock);
  return NULL;
}

int cr_mgr_new(const cr_mgr_opts *o, cr_session_mgr **out, cr_err *err) {
  cr_session_mgr *m = calloc(1, sizeof *m);
  if (!m)
    return cr_fail(err, ENOMEM, "creating the session manager");
  m->o = *o;
  if (m->o.reap_interval_s <= 0)
    m->o.reap_interval_s = 1;
  pthread_mutex_init(&m->lock, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_cond_init(&m->cv, &ca);
  pthread_condattr_destroy(&ca);
  int rc = pthread_create(&m->reaper, NULL, reaper_main, m);
  if (rc != 0) {
    free(m);
    return cr_fail(err, rc, "starting the session reaper");
  }
  m->reaper_started = true;
  *out = m;
  return 0;
}

static void unlink_entry(cr_session_mgr *m, entry *e) {
  for (entry **pp = &m->head; *pp; pp = &(*pp)->next)
    if (*pp == e) {
      *pp = e->next;
      break;
    }
}

void cr_mgr_free(cr_session_mgr *m) {
  if (!m)
    return;
  pthread_mutex_lock(&m->lock);
  m->stopping = true;
  pthread_cond_broadcast(&m->cv);
  pthread_mutex_unlock(&m->lock);
  if (m->reaper_started)
    pthread_join(m->reaper, NULL);
  /* Borrowers must be gone by now (the front end stopped first). */
  entry *e = m->head;
  while (e) {
    entry *n = e->next;
    entry_free(e);
    e = n;
  }
  pthread_mutex_destroy(&m->lock);
  pthread_cond_destroy(&m->cv);
  free(m);
}

int cr_mgr_open(cr_session_mgr *m, const cr_session_opts *o, double ttl_s, const char *owner,
                char id[40], cr_err *err) {
  if (ttl_s < 0 || ttl_s > m->o.max_lifetime_s)
    return cr_fail(err, 0, "ttl %.3g s is out of range: give 0 (the default, %g s) up to %g s",
                   ttl_s, m->o.default_ttl_s, m->o.max_lifetime_s);
  if (cr_mgr_reserve(m, err) < 0)
    return -1;
  /* reserved while the sandbox starts, outside the lock */

  entry *e = calloc(1, sizeof *e);
  cr_session *s = NULL;
  if (!e || cr_session_open(o, &s, err) < 0) {
    if (!e)
      cr_fail(err, ENOMEM, "opening a session");
    free(e);
    pthread_mutex_lock(&m->lock);
    m->count--;
    pthread_mutex_unlock(&m->lock);
    return -1;
  }
  unsigned char rnd[12];
  if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
    for (size_t i = 0; i < sizeof rnd; i++)
      rnd[i] = (unsigned char)(rand() & 0xff);
  char *p = e->id;
  p += sprintf(p, "s-");
  for (size_t i = 0; i < sizeof rnd; i++)
    p += sprintf(p, "%02x", rnd[i]);
  e->s = s;
  e->owner = owner ? strdup(owner) : NULL;
  e->created = e->last_used = cr_now_s();
  e->wall_created = e->wall_last = wall_s();
  e->ttl = ttl_s > 0 ? ttl_s : m->o.default_ttl_s;
  pthread_mutex_lock(&m->lock);
  e->next = m->head;
  m->head = e;
  pthread_mutex_unlock(&m->lock);
  memcpy(id, e->id, sizeof e->id);
  return 0;
}

cr_session *cr_mgr_get(cr_session_mgr *m, const char *id, const char *owner, cr_err *err) {
  pthread_mutex_lock(&m->lock);
  for (entry *e = m->head; e; e = e->next)
    if (strcmp(e->id, id) == 0 && !e->closing && owner_ok(e, owner)) {
      e->refs++;
      e->last_used = cr_now_s();
      e->wall_last = wall_s();
      pthread_mutex_unlock(&m->lock);
      return e->s;
    }
  pthread_mutex_unlock(&m->lock);
  cr_fail(err, 0, "no open session with id '%.40s': it was closed, it expired, or it never "
                       "existed; open a new session",
          id);
  return NULL;
}

void cr_mgr_release(cr_session_mgr *m, cr_session *s) {
  pthread_mutex_lock(&m->lock);
  for (entry *e = m->head; e; e = e->next)
    if (e->s == s) {
      e->refs--;
      e->last_used = cr_now_s();
      e->wall_last = wall_s();
      if (e->refs == 0 && e->closing) {
        unlink_entry(m, e);
        m->count--;
        pthread_mutex_unlock(&m->lock);
        entry_free(e);
        return;
      }
      break;
    }
  pthread_mutex_unlock(&m->lock);
}

int cr_mgr_close(cr_session_mgr *m, const char *id, const char *owner, cr_err *err) {
  pthread_mutex_lock(&m->lock);
  for (entry *e = m->head; e; e = e->next)
    if (strcmp(e->id, id) == 0 && !e->closing && owner_ok(e, owner)) {
      e->closing = true;
      if (e->refs == 0) {
        unlink_entry(m, e);
        m->count--;
        pthread_mutex_unlock(&m->lock);
        entry_free(e);
        return 0;
      }
      /* The running execution is interrupted (it frees the session
       * soonest) and the ones still queued return without running. */
      cr_session_shut(e->s);
      pthread_mutex_unlock(&m->lock);
      return 0;
    }
  pthread_mutex_unlock(&m->lock);
  return cr_fail(err, 0, "no open session with id '%.40s'", id);
}

int cr_mgr_reserve(cr_session_mgr *m, cr_err *err) {
  pthread_mutex_lock(&m->lock);
  if (m->count >= m->o.max_sessions) {
    pthread_mutex_unlock(&m->lock);
    cr_fail(err, 0, "the server already has %zu sessions open, its maximum (MCP sessions and "
                    "E2B contexts count too): close one (or wait for idle ones to expire) and "
                    "try again",
            m->o.max_sessions);
    err->errnum = EUSERS; /* for callers to tell; not part of the message */
    return -1;
  }
  m->count++;
  pthread_mutex_unlock(&m->lock);
  return 0;
}

void cr_mgr_unreserve(cr_session_mgr *m) {
  pthread_mutex_lock(&m->lock);
  m->count--;
  pthread_mutex_unlock(&m->lock);
}

size_t cr_mgr_count(cr_session_mgr *m) {
  pthread_mutex_lock(&m->lock);
  size_t n = m->count;
  pthread_mutex_unlock(&m->lock);
  return n;
}

size_t cr_mgr_reap(cr_session_mgr *m) {
  size_t closed = 0;
  for (;;) {
    entry *victim = NULL;
    double t = cr_now_s();
    pthread_mutex_lock(&m->lock);
    for (entry *e = m->head; e; e = e->next) {
      if (e->closing)
        continue;
      bool idle = e->refs == 0 && t - e->last_used > e->ttl;
      bool too_old = t - e->created > m->o.max_lifetime_s;
      if (idle || too_old) {
        e->closing = true;
        if (e->refs == 0) {
          unlink_entry(m, e);
          m->count--;
          victim = e;
          break;
        }
        /* Borrowed: closed at release; interrupt what it runs. */
        cr_session_shut(e->s);
      }
    }
    pthread_mutex_unlock(&m->lock);
    if (!victim)
      break;
    entry_free(victim);
    closed++;
  }
  return closed;
}

static void fill_info(const entry *e, cr_session_info *i) {
  memcpy(i->id, e->id, sizeof i->id);
  i->language = cr_session_language(e->s);
  i->created_at = e->wall_created;
  i->last_activity = e->wall_last;
  i->expires_at = e->wall_last + e->ttl;
  i->busy = e->refs > 0;
  i->executions = e->executions;
}

int cr_mgr_list(cr_session_mgr *m, const char *owner, cr_session_info **out, size_t *n) {
  pthread_mutex_lock(&m->lock);
  size_t k = 0;
  for (entry *e = m->head; e; e = e->next)
    if (!e->closing && owner_ok(e, owner))
      k++;
  cr_session_info *v = calloc(k ? k : 1, sizeof *v);
  if (!v) {
    pthread_mutex_unlock(&m->lock);
    return -1;
  }
  size_t j = 0;
  for (entry *e = m->head; e; e = e->next)
    if (!e->closing && owner_ok(e, owner)) {
      fill_info(e, &v[j]);
      double lim = e->wall_created + m->o.max_lifetime_s;
      if (v[j].expires_at > lim)
        v[j].expires_at = lim;
      j++;
    }
  pthread_mutex_unlock(&m->lock);
  *out = v;
  *n = j;
  return 0;
}

int cr_mgr_info(cr_session_mgr *m, const char *id, const char *owner, cr_session_info *out,
                cr_err *err) {
  pthread_mutex_lock(&m->lock);
  for (entry *e = m->head; e; e = e->next)
    if (strcmp(e->id, id) == 0 && !e->closing && owner_ok(e, owner)) {
      fill_info(e, out);
      double lim = e->wall_created + m->o.max_lifetime_s;
      if (out->expires_at > lim)
        out->expires_at = lim;
      pthread_mutex_unlock(&m->lock);
      return 0;
    }
  pthread_mutex_unlock(&m->lock);
  return cr_fail(err, 0, "no open session with id '%.40s'", id);
}

void cr_mgr_touch(cr_session_mgr *m, cr_session *s) {
  pthread_mutex_lock(&m->lock);
  for (entry *e = m->head; e; e = e->next)
    if (e->s == s) {
      e->executions++;
      break;
    }
  pthread_mutex_unlock(&m->lock);
}

void cr_mgr_shut_all(cr_session_mgr *m) {
  pthread_mutex_lock(&m->lock);
  for (entry *e = m->head; e; e = e->next)
    cr_session_shut(e->s);
  pthread_mutex_unlock(&m->lock);
}
