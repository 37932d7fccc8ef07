#!/usr/bin/env bash
# estop_sequence.sh: the emergency stop of a Meca500 as a lab meets it, on
# `bridge run` with a simulated robot in a process of its own and a Simulink
# partner commanding motion: press, release, reset at the power supply, then
# a person's `bridge resume`. After each step: the robot's state as the
# simulator reports it and the bridge's log lines since the last step. The
# arm must not move between the press and the resume (docs/meca500.md §15);
# the script exits 1 if it does, or if it does not move after the resume.
#
# Usage: scripts/estop_sequence.sh [protective]   (needs Go and curl)
# RUN=path/to/bridge runs that binary as the bridge under test (an older
# build, to see a defect), the simulator and partner staying this tree's.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
stop=estop
[[ ${1:-} == protective ]] && stop=pstop
W=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$W"' EXIT
(cd "$repo" && go build -o "$W/bridge" ./cmd/bridge)
B=$W/bridge
# Below the kernel's ephemeral ports (32768-60999).
DEV=127.0.0.1:25651 CTL=127.0.0.1:25652 MET=127.0.0.1:25653
awk '/^\[\[link\]\]/ { inlink = 1; keep = 0; next } !inlink { print; next }
	/^name = / { keep = ($3 == "\"meca500\""); if (keep) print "[[link]]" } keep' "$repo/bridge.toml" |
	sed -e "s|^metrics = .*|metrics = \"$MET\"|" -e 's|^log_format = .*|log_format = "text"|' \
		-e 's|^remote = .*|remote = "127.0.0.1:25610"|' -e 's|^bind = .*|bind = "127.0.0.1:25612"|' \
		-e 's|^listen = .*|listen = "127.0.0.1:25611"|' -e 's|^priority = .*|priority = 0|' \
		-e "s|^address = .*|address = \"$DEV\"|" \
		-e 's|^kind = "proportional"|kind = "sine"\noffset = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]\namplitude = [3.0, 3.0, 3.0, 3.0, 3.0, 3.0]\nfrequency = [0.2, 0.2, 0.2, 0.2, 0.2, 0.2]|' \
		-e '/^kp = 1.0/d' -e '/^r = \[30/d' -e '/^sat = 30.0/d' >"$W/link.toml"
# An older build does not know the keys added since (their defaults).
[[ -n ${RUN:-} ]] && sed -i '/^restart_after_stop = /d' "$W/link.toml"
"$B" sim meca500 -listen "$DEV" -control "$CTL" </dev/null >"$W/device.log" 2>&1 &
for _ in $(seq 100); do curl -sf "http://$CTL/status" >/dev/null && break; sleep 0.1; done
curl -sf "http://$CTL/status" >/dev/null || { echo "estop_sequence.sh: the simulator does not answer on $CTL:" >&2; cat "$W/device.log" >&2; exit 1; }
"$B" partner -config "$W/link.toml" -listen 127.0.0.1:25610 -reply-to 127.0.0.1:25611 -accept 127.0.0.1:25612 >"$W/partner.log" 2>&1 &
"${RUN:-$B}" run -config "$W/link.toml" >"$W/run.out" 2>"$W/run.log" &

status() { curl -sf "http://$CTL/status"; }
fault() { curl -sf -X POST "http://$CTL/fault/$1${2:+?value=$2}" >/dev/null; }
seen=0
step() {
	echo "== $1"
	echo "robot: $(status)"
	local n
	n=$(wc -l <"$W/run.log")
	# The bridge's lines since the last step, without the time stamps.
	sed -n "$((seen + 1)),${n}p" "$W/run.log" | sed -e 's/^time=[^ ]* //' | grep -v 'level=DEBUG' | cut -c1-300 || true
	seen=$n
	echo "healthz: $(curl -s "http://$MET/healthz" | head -3 | tr '\n' ' ')"
}
# moved: the arm moved at some moment within $1 seconds.
moved() {
	local end=$((SECONDS + $1))
	while ((SECONDS < end)); do
		[[ $(status) == *"moving=yes"* ]] && return 0
		sleep 0.05
	done
	return 1
}

moved 20 || { echo "the arm never moved under the partner's commands" >&2; cat "$W/run.log" >&2; exit 1; }
step "running: the partner commands motion"
fault "$stop"
sleep 2
step "$stop pressed"
moved 3 && { echo "FAIL: the arm moved while the stop was pressed" >&2; exit 1; }
fault "$stop" release
moved 3 && { echo "FAIL: the arm moved after the release" >&2; exit 1; }
step "$stop released"
fault "$stop" reset
moved 15 && { echo "FAIL: the arm moved after the reset, with no person's action" >&2; step "the arm moving after the reset"; exit 1; }
step "$stop reset (15 s later: nothing started)"
echo "== a person runs: bridge resume meca500"
"$B" resume meca500 -config "$W/link.toml"
moved 30 || { echo "FAIL: the arm did not move again after the resume" >&2; exit 1; }
sleep 1 # the fault watcher polls four times a second
step "after the resume"
echo "ok: no motion from the press to the person's resume"
