#!/usr/bin/env bash
# fault_table.sh: each fault a lab meets, provoked on the embedded default's
# Emio link (simulated devices, `bridge run`), and what the bridge says of it
# in the log, /healthz, systemd's STATUS= (a notify socket of our own) and
# the metrics. docs/faults.md lists the faults.
#
# It uses the default ports (25000, 25001, 9090) and 127.0.0.1:19410 for the
# metrics: stop any other bridge or Simulink model first.
#
# Usage: scripts/fault_table.sh   (needs Go and python3)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
W=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$W"' EXIT
(cd "$repo" && go build -o "$W/bridge" ./cmd/bridge)
B=$W/bridge
M=127.0.0.1:19410

# The Emio link only, with the metrics on $M; $1 edits it (sed script).
config() {
	awk '/^\[\[link\]\]/ { n++ } n < 2' "$repo/bridge.toml" |
		sed -e "s|^metrics = .*|metrics = \"$M\"|" -e "s|^log_format = .*|log_format = \"json\"|" -e "${1:-}" >"$W/emio.toml"
}

# notify: a systemd notify socket that writes what it receives to $W/notify.
notify() {
	rm -f "$W/notify.sock" "$W/notify"
	python3 - "$W/notify.sock" "$W/notify" <<'EOF' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a", buffering=1) as out:
    while True:
        out.write(s.recv(4096).decode().replace("\n", " ") + "\n")
EOF
	for _ in $(seq 50); do [[ -S $W/notify.sock ]] && return; sleep 0.1; done
}

report() {
	echo "-- log (faults, halts)"
	grep -E '"fault"|halt' "$W/log" | cut -c1-400 | sed 's/^/   /' || true
	echo "-- /healthz"
	curl -s -w ' [HTTP %{http_code}]\n' "http://$M/healthz" | sed 's/^/   /' || true
	echo "-- STATUS="
	grep -o 'STATUS=.*' "$W/notify" | uniq | sed 's/^/   /' || true
	echo "-- metrics"
	curl -s "http://$M/metrics" | grep -E "$1" | grep -v ' 0$' | sed 's/^/   /' || true
}

run_bridge() {
	NOTIFY_SOCKET=$W/notify.sock "$B" run -config "$W/emio.toml" "$@" >"$W/out" 2>"$W/log" &
	bpid=$!
}

echo "== no Simulink host, then one whose replies have the wrong size"
config
notify
run_bridge -duration 12s
sleep 5
"$B" partner -wrong-size 1 -duration 6s >/dev/null 2>&1 &
sleep 5
report 'bridge_fault_active|dropped_datagrams_total\{.*size'
wait $bpid || true

echo
echo "== a stray sender and a flood of the reply port (200,000 datagrams)"
config
notify
run_bridge -duration 12s
"$B" partner -controller hold -duration 12s >/dev/null 2>&1 &
sleep 4
python3 - <<'EOF'
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
d = bytes(40)
for _ in range(200000):
    s.sendto(d, ("127.0.0.1", 25001))
EOF
sleep 2
report 'bridge_fault_active|dropped_datagrams_total\{.*(foreign|kernel)'
wait $bpid || true

echo
echo "== a camera that does not stream"
config 's|^kind = "sim"                  # "sim": the virtual lab|kind = "realsense" # the virtual lab|; s|^serial = ""|serial = "no-such-camera"|; s|^clock = .*|clock = "timer"|; s|^clock_error_ppm = .*||; s|^jitter = .*||'
notify
run_bridge -duration 8s
"$B" partner -controller hold -duration 8s >/dev/null 2>&1 &
sleep 6
report 'bridge_fault_active|camera_up'
wait $bpid || true

echo
echo "== halt = torque_off, the adapter unplugged before the stop"
config "s|^port = \"sim\" |port = \"$W/robot\" |; s|^halt = \"hold\" |halt = \"torque_off\" |; s|^kind = \"sim\"                  # \"sim\": the virtual lab|kind = \"none\" # the virtual lab|; s|^clock = .*|clock = \"timer\"|"
notify
"$B" sim servos -link "$W/robot" >/dev/null 2>&1 &
spid=$!
sleep 1
run_bridge
"$B" partner -controller hold -duration 8s >/dev/null 2>&1 &
sleep 3
kill $spid
sleep 2
report 'bridge_fault_active'
kill -INT $bpid
set +e
wait $bpid
code=$?
set -e
echo "-- at the stop, the log:"
grep -E 'halt' "$W/log" | cut -c1-400 | sed 's/^/   /'
echo "-- exit status $code; the last line of its standard error:"
tail -n 1 "$W/log" | sed 's/^/   /'
