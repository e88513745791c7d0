#!/usr/bin/env bash
# Run the integration tests (hostile corpus included) inside a pids cgroup of
# our own, so that a sandbox wall that fails during development costs a red
# test, not a host that can start no process (a fork bomb under a sandbox
# without a pids limit left this machine unable to fork for about a minute).
#
#   tests/run-hostile-fenced.sh [pytest args...]     e.g. -k hostile, -x, -v
#
# Needs root and the cgroup v1 pids controller at /sys/fs/cgroup/pids (or a
# cgroup v2 hierarchy with the pids controller enabled for children).
# The fence is named ctest-fence-PID so that it never matches the corral-*
# names the leftover check looks for; corral's own cgroups made while we are
# inside the fence are searched for there too (the check walks every hierarchy).
set -u

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
max=${CORRAL_FENCE_PIDS_MAX:-2000}

if [ -d /sys/fs/cgroup/pids ] && [ -f /sys/fs/cgroup/pids/cgroup.procs ]; then
  root=/sys/fs/cgroup/pids
  orig=$(awk -F: '$2 ~ /(^|,)pids(,|$)/ {print $3; exit}' /proc/self/cgroup)
elif [ -f /sys/fs/cgroup/cgroup.controllers ] && grep -qw pids /sys/fs/cgroup/cgroup.controllers; then
  root=/sys/fs/cgroup
  orig=$(awk -F: '$1 == "0" {print $3; exit}' /proc/self/cgroup)
else
  echo "run-hostile-fenced: no pids cgroup controller found (/sys/fs/cgroup/pids); refusing to run hostile code unfenced" >&2
  exit 1
fi
parent="$root${orig%/}"
fence="$parent/ctest-fence-$$"

if ! mkdir "$fence"; then
  echo "run-hostile-fenced: cannot create $fence (run as root)" >&2
  exit 1
fi

cleanup() {
  # back to where we came from, then empty and remove the fence
  echo $$ > "$parent/cgroup.procs" 2>/dev/null || echo $$ > "$root/cgroup.procs"
  local i pids
  for i in $(seq 50); do
    pids=$(find "$fence" -name cgroup.procs -exec cat {} + 2>/dev/null | sort -u)
    [ -z "$pids" ] && break
    [ "$i" = 1 ] && echo "run-hostile-fenced: ending leftover processes in the fence: $(echo $pids)" >&2
    # shellcheck disable=SC2086  # one pid per word; every one was started under this script
    kill -KILL $pids 2>/dev/null
    sleep 0.1
  done
  find "$fence" -depth -type d -exec rmdir {} \; 2>/dev/null
  if [ -d "$fence" ]; then
    echo "run-hostile-fenced: could not remove $fence" >&2
  fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "$max" > "$fence/pids.max" || { echo "run-hostile-fenced: cannot set pids.max in $fence" >&2; exit 1; }
echo $$ > "$fence/cgroup.procs" || { echo "run-hostile-fenced: cannot enter $fence" >&2; exit 1; }

cd "$repo" || exit 1
export PYTHONDONTWRITEBYTECODE=1
/usr/bin/python3 -m pytest -q -p no:cacheprovider tests/integration "$@"
