#include "api/mhd.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static cr_mhd g_mhd;
static char g_err[CR_ERR_MSG_MAX];
static int g_rc = -1;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

#define SYM(field, name)                                                                   \
  do {                                                                                     \
    *(void **)(&g_mhd.field) = dlsym(h, name);                                             \
    if (!g_mhd.field) {                                                                    \
      snprintf(g_err, sizeof g_err, "libmicrohttpd has no %s: install libmicrohttpd12 "    \
                                    "(0.9.71 or newer)", name);                            \
      return;                                                                              \
    }                                                                                      \
  } while (0)

static void load(void) {
  void *h = dlopen("libmicrohttpd.so.12", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(g_err, sizeof g_err, "cannot load libmicrohttpd (%s): install libmicrohttpd12",
             dlerror());
    return;
  }
  SYM(start_daemon, "MHD_start_daemon");
  SYM(stop_daemon, "MHD_stop_daemon");
  SYM(quiesce_daemon, "MHD_quiesce_daemon");
  SYM(create_response_from_buffer, "MHD_create_response_from_buffer");
  SYM(create_response_from_callback, "MHD_create_response_from_callback");
  SYM(add_response_header, "MHD_add_response_header");
  SYM(queue_response, "MHD_queue_response");
  SYM(destroy_response, "MHD_destroy_response");
  SYM(lookup_connection_value, "MHD_lookup_connection_value");
  SYM(get_connection_values, "MHD_get_connection_values");
  SYM(get_daemon_info, "MHD_get_daemon_info");
  SYM(get_connection_info, "MHD_get_connection_info");
  g_rc = 0;
}

const cr_mhd *cr_mhd_load(cr_err *err) {
  pthread_once(&g_once, load);
  if (g_rc < 0) {
    cr_fail(err, 0, "%s", g_err);
    return NULL;
  }
  return &g_mhd;
}
