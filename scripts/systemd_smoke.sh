#!/usr/bin/env bash
# systemd_smoke.sh: the service under a real systemd, on a machine (or
# container) where systemd is not PID 1.
#
# It boots a private systemd as PID 1 of new PID, mount, UTS, IPC and network
# namespaces, installs robot "a" with `bridge install -root /`, runs the unit
# with ExecStart overridden to `bridge sim -ephemeral` (a drop-in), and checks
# that the unit
#   1. reaches active (running), so systemd got READY=1, with no adapter;
#   2. serves healthy links once `bridge sim servos -link /dev/robot-a` (a
#      simulated U2D2 on a pty) appears;
#   3. keeps running, same PID, no restart, while the adapter disappears;
#   4. is healthy again when the adapter comes back.
#
# Nothing outside is changed: /etc, /var and /usr/local are overlays, /run,
# /tmp and /dev are private (the one real device node is cpu_dma_latency),
# the sysinit units are masked, and the cgroups systemd creates are removed
# at the end. Needs root, systemd and util-linux (Debian packages systemd,
# util-linux), overlayfs, and Go unless BRIDGE_BIN names a built bridge.
#
# Usage: sudo scripts/systemd_smoke.sh
set -euo pipefail

if [[ ${1:-} == inner ]]; then
	# PID 1 of the new namespaces, before systemd replaces it.
	W=$2
	dma=$(stat -c '%t %T' /dev/cpu_dma_latency 2>/dev/null || true)
	mount --make-rprivate /
	for d in etc var usr/local; do
		n=${d//\//_}
		mkdir -p "$W/$n.up" "$W/$n.work"
		mount -t overlay overlay -o "lowerdir=/$d,upperdir=$W/$n.up,workdir=$W/$n.work" "/$d"
	done
	mount -t tmpfs -o mode=755 tmpfs /run
	mkdir -p /run/smoke
	mount --bind "$W" /run/smoke
	# A /dev of our own: the standard nodes, a private devpts for the
	# simulated adapter, the console into a file.
	mount -t tmpfs -o mode=755,nosuid tmpfs /dev
	for n in "null 1 3" "zero 1 5" "full 1 7" "random 1 8" "urandom 1 9" "tty 5 0"; do
		set -- $n
		mknod -m 666 "/dev/$1" c "$2" "$3"
	done
	mkdir /dev/pts /dev/shm
	mount -t devpts -o newinstance,ptmxmode=0666,mode=620,gid=5 devpts /dev/pts
	ln -s pts/ptmx /dev/ptmx
	mount -t tmpfs -o mode=1777 tmpfs /dev/shm
	ln -s /proc/self/fd /dev/fd
	if [[ -n $dma ]]; then
		set -- $dma
		mknod -m 600 /dev/cpu_dma_latency c $((16#$1)) $((16#$2))
	fi
	touch /dev/console
	mount --bind "$W/console.log" /dev/console
	mount -t tmpfs -o mode=1777 tmpfs /tmp
	# Only what the test needs starts: the sysinit units (tmpfiles, sysctl,
	# binfmt, modules…) are masked, journald excepted.
	mkdir -p /etc/systemd/system
	for u in /lib/systemd/system/sysinit.target.wants/* /lib/systemd/system/timers.target.wants/* \
		/etc/systemd/system/*.wants/*; do
		n=${u##*/}
		[[ $n == systemd-journald.service ]] && continue
		ln -sf /dev/null "/etc/systemd/system/$n"
	done
	printf '[Unit]\nDescription=bridge smoke test\n' >/etc/systemd/system/smoke.target
	ip link set lo up 2>/dev/null || true
	export container=bridge-smoke
	exec /lib/systemd/systemd --system --unit=smoke.target --log-target=console --log-level=info --show-status=false
fi

[[ $(id -u) == 0 ]] || { echo "systemd_smoke: run as root (sudo)" >&2; exit 2; }
for t in unshare nsenter /lib/systemd/systemd; do
	command -v "$t" >/dev/null || { echo "systemd_smoke: $t not found: install Debian packages systemd and util-linux" >&2; exit 2; }
done

repo=$(cd "$(dirname "$0")/.." && pwd)
W=$(mktemp -d /tmp/bridge-smoke.XXXXXX)
: >"$W/console.log"
if [[ -n ${BRIDGE_BIN:-} ]]; then
	cp "$BRIDGE_BIN" "$W/bridge"
else
	(cd "$repo" && go build -o "$W/bridge" ./cmd/bridge)
fi
find /sys/fs/cgroup -mindepth 1 -type d 2>/dev/null | sort >"$W/cgroups.before"

unshare --fork --pid --mount --uts --ipc --net --mount-proc "$0" inner "$W" &
ns=$!
pid1=""
cleanup() {
	set +e
	# SIGKILL to PID 1 ends every process of the namespace.
	pid1=${pid1:-$(pgrep -P "$ns")}
	[[ -n $pid1 ]] && kill -9 "$pid1" 2>/dev/null
	# unshare reaps it and exits; the cgroups empty only then.
	wait "$ns" 2>/dev/null
	# The cgroups systemd made (units' names), deepest first, if empty.
	find /sys/fs/cgroup -mindepth 1 -type d 2>/dev/null | sort >"$W/cgroups.after"
	comm -13 "$W/cgroups.before" "$W/cgroups.after" | grep -E '\.(slice|scope|service|mount|socket)(/|$)' |
		sort -r | while read -r d; do rmdir "$d" 2>/dev/null; done
	rm -rf "$W"
}
trap cleanup EXIT

nsx() { nsenter -t "$pid1" -m -u -i -n -p -- "$@"; }
fail() {
	echo "FAIL: $*"
	nsx systemctl status --no-pager -n 40 bridge@a 2>&1 || true
	exit 1
}
show() { nsx systemctl show -p ActiveState -p SubState -p MainPID -p NRestarts -p StatusText bridge@a | tr '\n' ' '; echo; }
prop() { nsx systemctl show -p "$1" --value bridge@a; }
# healthz is "CODE BODY" of GET /healthz on the instance's metrics port.
healthz() {
	nsx bash -c 'exec 3<>/dev/tcp/127.0.0.1/9310 && printf "GET /healthz HTTP/1.0\r\n\r\n" >&3 && cat <&3' 2>/dev/null |
		tr -d '\r' | awk 'NR==1{code=$2} text{body=body $0 " "} /^$/{text=1} END{print code, body}'
}
healthy() { [[ $(healthz) == 200* ]]; }
# waitfor N CMD…: CMD succeeds within N tries a second apart.
waitfor() {
	local n=$1
	shift
	for ((i = 0; i < n; i++)); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 1
	done
	return 1
}
adapter() {
	nsx bash -c '/run/smoke/bridge sim servos -link /dev/robot-a >/run/smoke/servos.log 2>&1 & echo $! >/run/smoke/servos.pid'
	waitfor 10 nsx test -e /dev/robot-a || fail "no /dev/robot-a"
	# What the adapter's udev rule does: the dialout group may use it.
	nsx sh -c 'p=$(readlink -f /dev/robot-a); chgrp dialout "$p"; chmod 0660 "$p"'
}

for ((i = 0; i < 50; i++)); do
	pid1=$(pgrep -P "$ns" || true)
	[[ -n $pid1 ]] && break
	sleep 0.1
done
[[ -n $pid1 ]] || fail "no PID 1 in the namespace"
waitfor 30 nsx systemctl is-system-running --wait || true
echo "== systemd $(nsx systemctl --version | head -1 | cut -d' ' -f2) is PID 1 of the namespace: $(nsx systemctl is-system-running 2>&1)"

echo "== bridge install -root / -name a"
sed -e 's|^port = "sim" |port = "/dev/robot-a"|' "$repo/bridge.toml" >"$W/a.toml"
nsx /run/smoke/bridge install -root / -name a -config /run/smoke/a.toml -serial SMOKE0001 -emioapi /run/smoke/none
nsx systemd-sysusers
# What 99-bridge.rules does for the bridge group.
nsx sh -c '[ -e /dev/cpu_dma_latency ] && chgrp bridge /dev/cpu_dma_latency && chmod 0660 /dev/cpu_dma_latency || true'
nsx mkdir -p /etc/systemd/system/bridge@a.service.d
# bridge sim on the installed configuration; a pty stands for the ttyUSB.
nsx sh -c 'printf "[Service]\nExecStart=\nExecStart=/usr/local/bin/bridge sim -ephemeral -config /etc/bridge/%%i.toml\nDeviceAllow=char-pts rw\n" >/etc/systemd/system/bridge@a.service.d/smoke.conf'
# A container without CAP_SYS_RESOURCE cannot raise RLIMIT_RTPRIO, so
# LimitRTPRIO=80 is clamped to the manager's 0; CAP_SYS_NICE then stands in,
# so the loop's sched_setattr still goes through the unit's seccomp filter.
rt=limit
if ! prlimit --rtprio=80:80 true 2>/dev/null; then
	rt=cap
	echo "note: RLIMIT_RTPRIO cannot be raised here (no CAP_SYS_RESOURCE): the smoke grants CAP_SYS_NICE instead"
	nsx sh -c 'printf "AmbientCapabilities=CAP_SYS_NICE\nCapabilityBoundingSet=CAP_SYS_NICE\n" >>/etc/systemd/system/bridge@a.service.d/smoke.conf'
fi
nsx cat /etc/systemd/system/bridge@a.service.d/smoke.conf | sed 's/^/  smoke.conf: /'
nsx systemctl daemon-reload

echo "== 1. start without the adapter"
nsx timeout 60 systemctl enable --now bridge@a || fail "systemctl enable --now bridge@a"
show
[[ $(prop ActiveState)/$(prop SubState) == active/running ]] || fail "not active (running): no READY=1"
pid=$(prop MainPID)
echo "healthz: $(healthz)"
echo "-- real time: the limits, the threads' policies, the cgroups"
nsx grep -E 'realtime priority|locked memory' "/proc/$pid/limits"
fifo=$(nsx ps -L -o tid=,cls=,rtprio=,comm= -p "$pid" | awk '$2 == "FF"')
echo "$fifo" | sed 's/^/  SCHED_FIFO thread /'
[[ -n $fifo ]] || fail "no SCHED_FIFO thread (rt: $rt): the unit's limits or seccomp filter refuse real time"
if nsx journalctl --no-pager -u bridge@a -o cat | grep -E 'set-up incomplete' ; then
	fail "a real-time setting was refused"
fi
nsx grep -E 'cpu|systemd' "/proc/$pid/cgroup" | sed 's/^/  cgroup /'

echo "== 2. the adapter appears"
adapter
waitfor 20 healthy || fail "not healthy with the adapter: $(healthz)"
show
echo "healthz: $(healthz)"

echo "== 3. the adapter disappears"
nsx sh -c 'kill $(cat /run/smoke/servos.pid); rm -f /dev/robot-a'
sleep 5
show
echo "healthz: $(healthz)"
[[ $(healthz) == 503* ]] || fail "the link did not notice the adapter going"
[[ $(prop ActiveState)/$(prop SubState) == active/running ]] || fail "stopped with the adapter"
[[ $(prop MainPID) == "$pid" && $(prop NRestarts) == 0 ]] || fail "restarted: MainPID $(prop MainPID), NRestarts $(prop NRestarts)"
# STATUS= says what is wrong now, and the journal has it at warning.
[[ $(prop StatusText) == *"device is not reachable"* ]] || fail "STATUS= does not say the device is down: $(prop StatusText)"
warnings=$(nsx journalctl --no-pager -u bridge@a -p warning -o cat)
echo "journalctl -p warning:"
echo "$warnings" | cut -c1-240 | sed 's/^/  /'
grep -q '"fault":"device_down"' <<<"$warnings" || fail "journalctl -p warning lacks the device_down fault"
if grep -q '"level":"INFO"' <<<"$warnings"; then fail "INFO lines at priority warning: the priority prefix is missing"; fi

echo "== 4. the adapter comes back"
adapter
waitfor 30 healthy || fail "not healthy again: $(healthz)"
show
echo "healthz: $(healthz)"
[[ $(prop MainPID) == "$pid" && $(prop NRestarts) == 0 ]] || fail "restarted: MainPID $(prop MainPID), NRestarts $(prop NRestarts)"

[[ $(prop StatusText) != *"not reachable"* ]] || fail "STATUS= still says the device is down: $(prop StatusText)"

echo "== /metrics under the unit's sandbox"
metrics=$(nsx bash -c 'exec 3<>/dev/tcp/127.0.0.1/9310 && printf "GET /metrics HTTP/1.0\r\n\r\n" >&3 && cat <&3')
for m in process_start_time_seconds process_open_fds bridge_loop_ticks_total; do
	grep -q "^$m" <<<"$metrics" || fail "/metrics lacks $m"
	echo "  $(grep -m1 "^$m" <<<"$metrics")"
done

echo "== status and journal"
nsx systemctl status --no-pager -n 0 bridge@a || true
nsx journalctl --no-pager -u bridge@a -o cat | grep -v '^$' | tail -n 30
echo "== systemd-analyze security bridge@a (the running manager)"
nsx systemd-analyze security --no-pager bridge@a.service | tail -n 1
echo "PASS"
