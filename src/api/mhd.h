/* libmicrohttpd, loaded when the server starts rather than linked: its TLS
 * dependencies cost ~1.4 ms of dynamic linking at every process start
 * (measured here), which every `corral run` would pay for a server it does
 * not start. The types come from the real header, so every call is checked
 * against the real prototype. */
#ifndef CORRAL_API_MHD_H
#define CORRAL_API_MHD_H

#include <microhttpd.h>

#include "util/err.h"

typedef struct cr_mhd {
  __typeof__(MHD_start_daemon) *start_daemon;
  __typeof__(MHD_stop_daemon) *stop_daemon;
  __typeof__(MHD_quiesce_daemon) *quiesce_daemon;
  __typeof__(MHD_create_response_from_buffer) *create_response_from_buffer;
  __typeof__(MHD_create_response_from_callback) *create_response_from_callback;
  __typeof__(MHD_add_response_header) *add_response_header;
  __typeof__(MHD_queue_response) *queue_response;
  __typeof__(MHD_destroy_response) *destroy_response;
  __typeof__(MHD_lookup_connection_value) *lookup_connection_value;
  __typeof__(MHD_get_connection_values) *get_connection_values;
  __typeof__(MHD_get_daemon_info) *get_daemon_info;
  __typeof__(MHD_get_connection_info) *get_connection_info;
} cr_mhd;

/* Loads the library once; returns the table, or NULL with a message that
 * says which package to install. */
const cr_mhd *cr_mhd_load(cr_err *err);

#endif
