#!/usr/bin/env bash
# stop_matrix.sh: stop `bridge run` N times with each of SIGTERM, SIGINT and
# SIGHUP while a Simulink partner commands motion, the robot simulated in a
# process of its own, and read from the simulator, after each stop, whether
# the robot was left moving (docs/faults.md §5). Every stop must leave it
# still: the script exits 1 otherwise.
#
# Kinds: vrep-az, vrep-zmq (wheel speeds, lock step), meca500 (joint
# velocities). Ports 127.0.0.1:25600-25602 and 25641-25642 are used.
#
# Usage: scripts/stop_matrix.sh KIND [N]   (needs Go, curl and python3)
# HALT=torque_off sets the link's halt policy (default: the embedded
# default's, hold). RUN=path/to/bridge runs that binary as the bridge under test (an older
# build, to see a defect), the simulators and partner staying this tree's.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
kind=${1:?usage: stop_matrix.sh vrep-az|vrep-zmq|meca500 [N]}
n=${2:-50}
W=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$W"' EXIT
(cd "$repo" && go build -o "$W/bridge" ./cmd/bridge)
B=$W/bridge
# Below the kernel's ephemeral ports (32768-60999), which a busy machine
# hands to outgoing connections at any moment.
DEV=127.0.0.1:25641 CTL=127.0.0.1:25642

# The link named $1 of the embedded default, alone, on ports of its own,
# with its plant's lines edited by $2 (a sed script).
config() {
	awk -v link="$1" '/^\[\[link\]\]/ { inlink = 1; keep = 0; next } !inlink { print; next }
		/^name = / { keep = ($3 == "\"" link "\""); if (keep) print "[[link]]" } keep' "$repo/bridge.toml" |
		sed -e 's|^metrics = .*|metrics = ""|' -e 's|^log_format = .*|log_format = "json"|' \
			-e 's|^remote = .*|remote = "127.0.0.1:25600"|' -e 's|^bind = .*|bind = "127.0.0.1:25602"|' \
			-e 's|^listen = .*|listen = "127.0.0.1:25601"|' -e 's|^priority = .*|priority = 0|' -e "s|^halt = \"hold\"|halt = \"${HALT:-hold}\"|" -e "$2" >"$W/link.toml"
}

case $kind in
vrep-az)
	config vrep "s|^address = .*|address = \"$DEV\"|"
	"$B" sim vrep -protocol az -listen "$DEV" -control "$CTL" </dev/null >"$W/device.log" 2>&1 &
	;;
vrep-zmq)
	config vrep "s|^address = .*|address = \"$DEV\"|; s|^protocol = .*|protocol = \"zmq\"|; s|^# stepping = .*|stepping = true|; s|^# start = .*|start = true|; /^measure = /d; /^command = /d"
	"$B" sim vrep -protocol zmq -listen "$DEV" -control "$CTL" </dev/null >"$W/device.log" 2>&1 &
	;;
meca500)
	# A partner that keeps the arm moving: joint speeds swaying around 0.
	config meca500 "s|^address = .*|address = \"$DEV\"|; s|^kind = \"proportional\"|kind = \"sine\"\noffset = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]\namplitude = [3.0, 3.0, 3.0, 3.0, 3.0, 3.0]\nfrequency = [0.2, 0.2, 0.2, 0.2, 0.2, 0.2]|; /^kp = 1.0/d; /^r = \[30/d; /^sat = 30.0/d"
	"$B" sim meca500 -listen "$DEV" -control "$CTL" </dev/null >"$W/device.log" 2>&1 &
	;;
*)
	echo "stop_matrix.sh: kind $kind: want vrep-az, vrep-zmq or meca500" >&2
	exit 2
	;;
esac
"$B" partner -config "$W/link.toml" -listen 127.0.0.1:25600 -reply-to 127.0.0.1:25601 -accept 127.0.0.1:25602 >"$W/partner.log" 2>&1 &
for _ in $(seq 100); do curl -sf "http://$CTL/status" >/dev/null && break; sleep 0.1; done
curl -sf "http://$CTL/status" >/dev/null || { echo "stop_matrix.sh: the simulator does not answer on $CTL:" >&2; cat "$W/device.log" >&2; exit 1; }

status() { curl -sf "http://$CTL/status"; }

# moving: the simulator's state says the robot moves or is commanded to.
moving() {
	local s
	s=$(status)
	case $kind in
	vrep-*)
		# targets [a b] rad/s: any non-zero target is a robot driving.
		python3 -c 'import re,sys; m=re.search(r"targets \[([^\]]*)\]", sys.argv[1]); v=[float(x) for x in m.group(1).replace(",", " ").split()] if m else [1]; sys.exit(0 if any(abs(x) > 0 for x in v) else 1)' "$s"
		;;
	meca500) [[ $s == *"moving=yes"* ]] ;;
	esac
}

left=0 total=0 invalid=0
for sig in TERM INT HUP; do
	bad=0
	for i in $(seq "$n"); do
		"${RUN:-$B}" run -config "$W/link.toml" >"$W/run.out" 2>"$W/run.log" &
		pid=$!
		for _ in $(seq 300); do moving && break; sleep 0.05; done
		if ! moving; then
			echo "stop $sig #$i: the robot never moved under the partner's commands; not counted" >&2
			status >&2
			tail -3 "$W/run.log" >&2
			kill -KILL "$pid"
			wait "$pid" || true
			invalid=$((invalid + 1))
			continue
		fi
		# A random moment within a tick.
		sleep "0.0$((RANDOM % 10))"
		kill -"$sig" "$pid"
		code=0
		wait "$pid" || code=$?
		# What the scene or the arm does now, with nobody commanding.
		sleep 0.5
		total=$((total + 1))
		if moving; then
			bad=$((bad + 1))
			echo "stop $sig #$i (exit $code): left moving: $(status)" >&2
		fi
		if [[ $code != 0 ]]; then
			echo "stop $sig #$i: exit $code" >&2
			tail -3 "$W/run.log" >&2
		fi
		grep -q '"halt applied"\|halt applied' "$W/run.log" || echo "stop $sig #$i: no halt in the log" >&2
	done
	echo "$kind (halt ${HALT:-hold}) SIG$sig: $n runs, $bad left the robot moving; last state: $(status)"
	left=$((left + bad))
done
echo "$kind: $total stops, $left left the robot moving ($invalid runs in which the robot never moved, not counted)"
[[ $left == 0 && $invalid == 0 ]]
