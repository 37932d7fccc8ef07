#!/bin/sh
# page_cost.sh [PHASE_SECONDS [ROUNDS]]: what the status page costs the loops.
# One `bridge sim` on the embedded default runs throughout; phases of
# PHASE_SECONDS (at least 61: the lateness quantiles cover the last minute
# of ticks) alternate: no page; the server's side only (curl fetching
# /status.json twice a second and the camera's thumbnail four times, as the
# page does); and the page open in headless Chromium, a browser rendering
# on the same machine. At the end of each phase the script reads every link's tick
# lateness p99 and max of that minute from /metrics; it prints one row per
# phase and link. Run it from the repository's root; it needs chromium.
set -eu
phase=${1:-75}
out=$(mktemp -d)
go build -o "$out/bridge" ./cmd/bridge
port=$((19300 + $$ % 500))
sed -e "s/127.0.0.1:9310/127.0.0.1:$port/" bridge.toml >"$out/cfg.toml"
"$out/bridge" sim -config "$out/cfg.toml" -ephemeral >"$out/sim.log" 2>&1 &
sim=$!
trap 'kill $sim 2>/dev/null; [ -n "${cr:-}" ] && kill $cr 2>/dev/null; rm -rf "$out"' EXIT
sleep 5
read_phase() { # name
	curl -s "http://127.0.0.1:$port/metrics" |
		awk -v ph="$1" '
		/^bridge_loop_lateness_quantile_seconds\{.*quantile="0.99"/ { match($0, /link="[^"]*"/); l = substr($0, RSTART+6, RLENGTH-7); p99[l] = $2 }
		/^bridge_loop_lateness_max_seconds\{/ { match($0, /link="[^"]*"/); l = substr($0, RSTART+6, RLENGTH-7); mx[l] = $2 }
		END { for (l in p99) printf "%-9s %-8s p99 %8.1f µs   max %8.1f µs\n", ph, l, p99[l]*1e6, mx[l]*1e6 }' | sort -k2
}
for n in $(seq "${2:-3}"); do
	sleep "$phase"
	read_phase "no page"
	end=$(($(date +%s) + phase))
	while [ "$(date +%s)" -lt "$end" ]; do
		curl -s -o /dev/null "http://127.0.0.1:$port/status.json"
		curl -s -o /dev/null "http://127.0.0.1:$port/camera/emio.jpg"
		sleep 0.25
		curl -s -o /dev/null "http://127.0.0.1:$port/camera/emio.jpg"
		sleep 0.25
	done
	read_phase "poll"
	chromium --headless --no-sandbox --disable-gpu --user-data-dir="$out/chr" \
		--remote-debugging-port=0 "http://127.0.0.1:$port/" >"$out/chromium.log" 2>&1 &
	cr=$!
	sleep "$phase"
	read_phase "page"
	if ! kill -0 $cr 2>/dev/null; then
		echo "chromium exited early: the page phase had no page" >&2
		cat "$out/chromium.log" >&2
		exit 1
	fi
	kill $cr; wait $cr 2>/dev/null || true
	cr=
done
