#!/bin/bash
# corral's bash session driver. The contract is docs/session-protocol.md.
#
# The supervisor starts it as `bash /.corral/driver.sh`: fd 0 is /dev/null,
# fds 1 and 2 carry the cells' output unframed, fd 3 brings requests and
# fd 4 takes events. Cells run in this one shell, never in a subshell, so
# variables, functions, aliases, options and the working directory persist.
#
# Interrupting. The supervisor sends SIGINT to the process group. Bash has
# no way to abandon running shell code from a trap (a trap handler runs and
# the `while true; do :; done` it interrupted goes on), but an interactive
# shell does exactly that on SIGINT: it drops the running command, however
# deeply nested, and goes back to its prompt. So the driver runs as an
# interactive shell (without job control, so a cell's foreground children
# stay in our process group and get the SIGINT too) and serves requests from
# PROMPT_COMMAND, which the shell runs again before every prompt. After an
# interrupt the loop restarts, reports the cut-short cell as "interrupted"
# and goes on with the shell's state intact. Bash prints a newline to the
# cell's stderr when it drops a command on SIGINT, as at a terminal.
#
# Between cells SIGINT is ignored (trap '' INT), so that it cannot cut a
# request in half; a cell gets the default back, and so do its children.
#
# A cell that runs `exit N`, or fails under `set -e`, ends this shell as it
# would end any shell: the driver exits with that status without sending
# "done", and the supervisor starts a new driver (variables are lost, files
# are kept). A cell's own INT trap is replaced by the driver's.

if [[ $- != *i* ]]; then
    # Stage 1, the script as started: become the interactive shell, with
    # this file as its startup file. A SIGINT ignored by whoever started
    # us would be inherited, and an ignored-at-entry signal cannot be
    # reset by bash; env --default-signal (coreutils 8.31) resets it.
    # PS1= makes Debian's /etc/bash.bashrc return before it sets anything
    # up. fd 2 goes to /dev/null while bash starts, which complains that
    # there is no terminal for job control; fd 9 keeps the real one.
    __corral_env=(env)
    if env --default-signal=INT true 2>/dev/null; then
        __corral_env+=(--default-signal=INT)
    fi
    exec "${__corral_env[@]}" PS1= "$BASH" --rcfile "${BASH_SOURCE[0]}" --noediting -i 9>&2 2>/dev/null
    echo "corral bash driver: cannot start an interactive bash" >&2
    exit 2
fi

# Stage 2: sourced as the startup file of the interactive shell.
exec 2>&9 9>&-
export -n PS1
PS1='' PS2='' PROMPT_DIRTRIM=''
set +o history +m
unset HISTFILE MAILCHECK
trap '' INT
trap 'exit 143' TERM   # an interactive shell ignores SIGTERM; a driver must not

# The supervisor writes requests in exactly this shape (no spaces, keys in
# this order), which is what lets a regular expression stand in for JSON.
__corral_request_re='^\{"type":"([a-z]+)","id":([0-9]+)(,"code_b64":"([A-Za-z0-9+/]*={0,2})")?\}$'
__corral_running=''   # the id of the cell that is running, if any
__corral_flags=''     # the user's errexit/nounset/xtrace/verbose, kept while the driver runs

# One frame on fd 4. Events are ASCII, so ${#1} counts bytes in any locale.
__corral_send() {
    builtin printf '%d\n%s' "${#1}" "$1" >&4
}

__corral_fatal() {
    builtin printf 'corral bash driver: %s\n' "$1" >&2
    exit 2
}

# Reads requests until an execute: answers pings, exits on shutdown or when
# the supervisor closes the pipe. Sets __corral_id and __corral_code.
# Requests are ASCII (digits, JSON, base64), so `read -N` counts bytes
# whatever the locale.
__corral_next() {
    local len body
    while :; do
        IFS= builtin read -r -u 3 len || exit 0
        [[ $len =~ ^[0-9]{1,8}$ ]] && (( 10#$len <= 67108864 )) \
            || __corral_fatal "bad frame length"
        IFS= builtin read -r -u 3 -N "$((10#$len))" body && [[ ${#body} == $((10#$len)) ]] \
            || __corral_fatal "truncated frame"
        [[ $body =~ $__corral_request_re ]] || __corral_fatal "malformed request"
        case ${BASH_REMATCH[1]} in
        execute)
            [[ ${BASH_REMATCH[3]} ]] || __corral_fatal "execute without code_b64"
            __corral_id=${BASH_REMATCH[2]}
            # command -p: a cell may have changed PATH or defined a function
            # called base64. $(...) drops trailing newlines, which a shell
            # script does not miss.
            __corral_code=$(command -p base64 -d <<<"${BASH_REMATCH[4]}") \
                || __corral_fatal "code_b64 is not base64"
            return 0 ;;
        ping) __corral_send "{\"type\":\"pong\",\"id\":${BASH_REMATCH[2]}}" ;;
        shutdown) exit 0 ;;
        *) __corral_fatal "unknown request ${BASH_REMATCH[1]}" ;;
        esac
    done
}

# Called with the user's options in force: remembers the ones that would
# break the driver's own code or litter stderr with its trace, and turns
# them off. The caller silences the xtrace line of this very call.
__corral_park() {
    __corral_flags=${-//[^euvx]/}
    set +euvx
}

__corral_unpark() {
    if [[ $__corral_flags ]]; then set "-$__corral_flags"; fi
}

__corral_done() {   # $1 status, $2 exit code
    __corral_send "{\"type\":\"done\",\"id\":$__corral_running,\"status\":\"$1\",\"exit_code\":$2}"
    __corral_running=''
}

# The serving loop. It is PROMPT_COMMAND's text, not a function, so a cell
# runs at the top level of the shell: `declare` makes globals there, as in
# a script. The cell runs inside a one-pass `for`, so a stray `break` or
# `continue` ends the cell instead of this loop; 3<&- 4>&- keep the
# protocol pipes from the cell and the processes it starts (bash restores
# them afterwards).
PROMPT_COMMAND='trap "" INT
{ __corral_park; } 2>/dev/null
if [[ $__corral_running ]]; then __corral_done interrupted 130; fi
while __corral_next; do
    __corral_running=$__corral_id
    trap - INT
    for __corral_pass in 1; do
        __corral_unpark
        builtin eval "$__corral_code" 3<&- 4>&-
    done
    { __corral_status=$?; __corral_park; } 2>/dev/null
    trap "" INT
    if [[ $__corral_status == 0 ]]; then
        __corral_done ok 0
    else
        __corral_done error "$__corral_status"
    fi
done'
declare -r PROMPT_COMMAND

__corral_send "{\"type\":\"ready\",\"language\":\"bash\",\"version\":\"${BASH_VERSINFO[0]}.${BASH_VERSINFO[1]}.${BASH_VERSINFO[2]}\"}"
