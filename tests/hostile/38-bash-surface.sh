# probe: bash reaches the harness's port through /dev/tcp, reads PID 1's environment, mounts, unshares, checks /tmp options and core dumps
# lang: bash
wins=""; missing=""
if [ -n "${CORRAL_HOST_PORT:-}" ]; then
  if (exec 3<>"/dev/tcp/127.0.0.1/$CORRAL_HOST_PORT") 2>/dev/null; then wins="$wins tcp:$CORRAL_HOST_PORT"; fi
else
  missing="$missing no-CORRAL_HOST_PORT"
fi
if tr '\0' '\n' < /proc/1/environ 2>/dev/null | grep -qiE 'KEY=|TOKEN=|SECRET=|CANARY'; then wins="$wins pid1-environ"; fi
if [ -d /sys ] && [ -n "$(ls -A /sys 2>/dev/null)" ]; then wins="$wins sys-visible"; fi
read -r _ outside count < /proc/self/uid_map
if [ "$outside" = "0" ] && [ "$count" = "4294967295" ]; then echo "ESCAPED: runs in the host's user namespace"; exit 0; fi
mkdir -p /tmp/m
mount -t tmpfs none /tmp/m 2>/dev/null && wins="$wins mount"
unshare --user --map-root-user true 2>/dev/null && wins="$wins unshare-user"
unshare --net true 2>/dev/null && wins="$wins unshare-net"
for d in /tmp /workspace; do
  opts=""
  while read -r _ _ _ _ mp o _; do [ "$mp" = "$d" ] && opts=$o; done < /proc/self/mountinfo
  case ",$opts," in *,nosuid,*) ;; *) missing="$missing $d-not-nosuid($opts)";; esac
  case ",$opts," in *,nodev,*) ;; *) missing="$missing $d-not-nodev($opts)";; esac
done
[ "$(ulimit -c)" = "0" ] || missing="$missing core-dumps-allowed($(ulimit -c))"
n=$(ls -d /proc/[0-9]* | wc -l)
[ "$n" -le 8 ] || wins="$wins $n-processes-visible"
if [ -n "$wins" ]; then echo "ESCAPED$wins"; elif [ -n "$missing" ]; then echo "WALL-MISSING$missing"; else echo "CONTAINED"; fi
