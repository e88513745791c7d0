#!/bin/bash
# corral session driver for bash (docs/session-protocol.md).
__corral_send() { local b=$1; printf '%d\n%s' "${#b}" "$b" >&4; }
__corral_interrupted=0
trap '__corral_interrupted=1' INT
__corral_send '{"type":"ready","language":"bash","version":"'"${BASH_VERSION}"'"}'
while :; do
  LC_ALL=C read -r __corral_len <&3 || exit 0
  LC_ALL=C read -r -N "$__corral_len" __corral_req <&3 || exit 0
  [[ $__corral_req =~ \"id\":([0-9]+) ]] || continue
  __corral_id=${BASH_REMATCH[1]}
  if [[ $__corral_req =~ \"type\":\"ping\" ]]; then __corral_send '{"type":"pong","id":'"$__corral_id"'}'; continue; fi
  [[ $__corral_req =~ \"code_b64\":\"([A-Za-z0-9+/=]*)\" ]] || continue
  __corral_code=$(printf '%s' "${BASH_REMATCH[1]}" | base64 -d)
  __corral_interrupted=0
  eval "$__corral_code" </dev/null
  __corral_rc=$?
  if [ $__corral_interrupted = 1 ]; then __corral_st=interrupted; elif [ $__corral_rc = 0 ]; then __corral_st=ok; else __corral_st=error; fi
  __corral_send '{"type":"done","id":'"$__corral_id"',"status":"'"$__corral_st"'","exit_code":'"$__corral_rc"'}'
done
