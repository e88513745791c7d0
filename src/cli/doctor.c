/* corral doctor: what this host supports, what falls back, and a real
 * sandboxed run to prove the walls go up. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "exec/exec.h"
#include "runtime/runtime.h"
#include "sandbox/sandbox.h"

static const char *onoff(bool b) { return b ? "on" : "off"; }

int cr_cli_doctor(int argc, char **argv) {
  bool json = argc > 1 && strcmp(argv[1], "--json") == 0;
  if (argc > 1 && !json) {
    fprintf(stderr, "corral doctor: unknown argument '%s' (only --json)\n", argv[1]);
    return 2;
  }
  const cr_host_info *h = cr_host_get();

  /* The proof: a sandboxed run of each installed language. */
  json_t *langs = json_object();
  bool all_ok = true;
  const char *names[] = {"python", "node", "bash"};
  const char *codes[] = {"print('ok')", "console.log('ok')", "echo ok"};
  for (size_t i = 0; i < 3; i++) {
    const cr_runtime *rt = cr_runtime_find(names[i]);
    const char *interp = cr_runtime_interpreter(rt);
    json_t *l = json_object();
    json_object_set_new(l, "interpreter", interp ? json_string(interp) : json_null());
    if (interp) {
      cr_exec_spec s;
      cr_exec_spec_init(&s);
      s.language = names[i];
      s.code = codes[i];
      s.code_len = strlen(codes[i]);
      s.timeout_s = 10;
      cr_result r;
      cr_err err = {0};
      if (cr_execute(&s, NULL, &r, &err) < 0) {
        json_object_set_new(l, "sandbox", json_string(err.msg));
        all_ok = false;
      } else {
        bool ok = r.status == CR_ST_OK && r.out_len >= 2 && strncmp(r.out, "ok", 2) == 0;
        json_object_set_new(l, "sandbox", json_string(ok ? "works" : cr_status_name(r.status)));
        if (!ok) {
          all_ok = false;
          if (r.has_error && r.error.message)
            json_object_set_new(l, "error", json_string(r.error.message));
        }
        json_object_set_new(l, "duration_ms", json_real(r.duration_ms));
        cr_result_free(&r);
      }
    } else {
      json_object_set_new(l, "sandbox", json_string("not installed"));
    }
    json_object_set_new(langs, names[i], l);
  }

  const char *cg = h->cg_mode == CR_CG_V2 ? "cgroup-v2" : h->cg_mode == CR_CG_V1 ? "cgroup-v1"
                                                                                 : "off";
  if (json) {
    json_t *o = json_object();
    json_object_set_new(o, "kernel", json_string(h->kernel));
    json_object_set_new(o, "privileged", json_boolean(h->root));
    json_object_set_new(o, "user_namespaces", json_string(onoff(h->userns)));
    json_object_set_new(o, "seccomp", json_string(onoff(h->seccomp)));
    json_object_set_new(o, "landlock", h->landlock_abi ? json_integer(h->landlock_abi)
                                                       : json_string("off"));
    json_object_set_new(o, "mount_setattr", json_string(h->mount_setattr ? "on" : "fallback"));
    json_object_set_new(o, "cgroups", json_string(cg));
    json_object_set_new(o, "cgroup_memory", json_string(h->cg_memory ? "on" : "fallback: rlimit"));
    json_object_set_new(o, "cgroup_pids", json_string(h->cg_pids ? "on" : "fallback: rlimit"));
    json_object_set_new(o, "cgroup_note", json_string(h->cg_note));
    json_object_set_new(o, "languages", langs);
    json_object_set_new(o, "ok", json_boolean(all_ok));
    json_dumpf(o, stdout, JSON_INDENT(2));
    fputc('\n', stdout);
    json_decref(o);
  } else {
    printf("kernel            %s\n", h->kernel);
    printf("running as        %s\n", h->root ? "root (a fresh unprivileged uid per sandbox)"
                                            : "unprivileged user (own uid mapped)");
    printf("user namespaces   %s\n", onoff(h->userns));
    printf("seccomp           %s\n", onoff(h->seccomp));
    if (h->landlock_abi)
      printf("landlock          on (ABI %d)\n", h->landlock_abi);
    else
      printf("landlock          off (kernel without Landlock, or not in the LSM list)\n");
    printf("mount_setattr     %s\n", h->mount_setattr ? "on (recursive read-only binds)"
                                                     : "fallback (remount each bind)");
    printf("cgroups           %s\n", cg);
    printf("  memory limit    %s\n", h->cg_memory ? "on" : "fallback: RLIMIT_DATA per process");
    printf("  pids limit      %s\n", h->cg_pids ? "on" : "fallback: RLIMIT_NPROC (per user namespace)");
    printf("  note            %s\n", h->cg_note);
    const char *key;
    json_t *v;
    json_object_foreach(langs, key, v) {
      json_t *dur = json_object_get(v, "duration_ms");
      printf("%-17s %s", key, json_string_value(json_object_get(v, "sandbox")));
      if (dur)
        printf(" (%.1f ms)", json_real_value(dur));
      json_t *e = json_object_get(v, "error");
      if (e)
        printf(": %s", json_string_value(e));
      printf("\n");
    }
    printf("%s\n", all_ok ? "ok: sandboxes work on this host"
                          : "PROBLEM: see the lines above");
    json_decref(langs);
  }
  return all_ok ? 0 : 1;
}
