#!/bin/sh
# http_cost.sh [PHASE_SECONDS [CLIENTS [MECA500_HZ [ROUNDS]]]]: what HTTP load
# costs the loops. One `bridge sim` on the embedded default (the Meca500 link
# at MECA500_HZ, default 1000) runs throughout; phases of PHASE_SECONDS (at
# least 61: the lateness max and quantiles cover the last minute of ticks)
# alternate: quiet, then CLIENTS (default 500) keep-alive clients on every
# endpoint (scripts/http_load.py). At the end of each phase it prints, per
# link, the send lateness p99 and max of that minute and the phase's
# timeouts, overruns and re-handshakes (counter deltas), and the load's
# answers. Run it from the repository's root, as root for SCHED_FIFO;
# BRIDGE=path runs that binary instead of building one; PIN=CPU pins every
# link's loop to that CPU ([link.loop] cpu), which keeps the process's other
# threads off it; NICE=N sets [service] nice; VREP2=1 adds a second V-REP link. CLIENTS = 0 runs quiet
# phases only, ROUNDS of them: a soak, a minute each.
set -eu
phase=${1:-65}
clients=${2:-500}
meca=${3:-1000}
rounds=${4:-1}
out=$(mktemp -d)
if [ -n "${BRIDGE:-}" ]; then cp "$BRIDGE" "$out/bridge"; else go build -o "$out/bridge" ./cmd/bridge; fi
awk -v hz="$meca" -v pin="${PIN:-}" -v nice="${NICE:-}" '
	/^name = "meca500"/ { m = 1 }
	m && /^rate_hz/ { $0 = "rate_hz = " hz; m = 0 }
	/^monitoring_interval/ && hz > 100 { $0 = "monitoring_interval = \"1ms\"" }
	/^cpu = -1/ && pin != "" { $0 = "cpu = " pin }
	/^nice = / && nice != "" { $0 = "nice = " nice }
	{ print }' bridge.toml >"$out/cfg.toml"
if [ -n "${VREP2:-}" ]; then # a second V-REP link, as the soak of docs/realtime.md §17
	sed -n '/^name = "vrep"/,$p' bridge.toml |
		sed 's/^name = "vrep"/name = "vrep2"/; s/:25020"/:25030"/; s/:9092"/:9093"/; s/:25021"/:25031"/; s/^cpu = -1/cpu = '"${PIN:--1}"'/' |
		{ echo; echo '[[link]]'; cat; } >>"$out/cfg.toml"
fi
ulimit -n 4096 2>/dev/null || true
"$out/bridge" sim -config "$out/cfg.toml" -ephemeral -metrics 127.0.0.1:0 >"$out/sim.log" 2>&1 &
sim=$!
trap 'kill $sim 2>/dev/null; [ -n "${ld:-}" ] && kill $ld 2>/dev/null; rm -rf "$out"' EXIT
addr=
for _ in $(seq 100); do
	addr=$(sed -n 's/.*"msg":"metrics: serving".*"addr":"\([0-9.:]*\)".*/\1/p' "$out/sim.log" | head -1)
	[ -n "$addr" ] && break
	sleep 0.1
done
[ -n "$addr" ] || { echo "bridge sim did not say where it serves:" >&2; cat "$out/sim.log" >&2; exit 1; }
counters() {
	curl -s "http://$addr/metrics" | awk '
		/^bridge_link_status_total\{/ && /status="TIMEOUT"/ { match($0, /link="[^"]*"/); print substr($0, RSTART+6, RLENGTH-7), "timeouts", $2 }
		/^bridge_loop_overruns_total\{/ { match($0, /link="[^"]*"/); print substr($0, RSTART+6, RLENGTH-7), "overruns", $2 }
		/^bridge_link_status_total\{/ && /status="RECONNECTED"/ { match($0, /link="[^"]*"/); print substr($0, RSTART+6, RLENGTH-7), "handshakes", $2 }
		/^go_gc_duration_seconds_count/ { print "process", "gcs", $2 }'
}
read_phase() { # name before-file
	counters >"$out/after"
	curl -s "http://$addr/metrics" |
		awk -v ph="$1" -v before="$2" -v after="$out/after" '
		BEGIN { while ((getline l < before) > 0) { split(l, f, " "); b[f[1] " " f[2]] = f[3] }
		        while ((getline l < after) > 0) { split(l, f, " "); d[f[1] " " f[2]] = f[3] - b[f[1] " " f[2]] } }
		/^bridge_loop_lateness_quantile_seconds\{.*quantile="0.99"/ { match($0, /link="[^"]*"/); l = substr($0, RSTART+6, RLENGTH-7); p99[l] = $2 }
		/^bridge_loop_lateness_max_seconds\{/ { match($0, /link="[^"]*"/); l = substr($0, RSTART+6, RLENGTH-7); mx[l] = $2 }
		END { for (l in p99) printf "%-6s %-8s p99 %8.1f µs  max %9.1f µs  timeouts %6d  overruns %6d  re-handshakes %4d\n",
			ph, l, p99[l]*1e6, mx[l]*1e6, d[l " timeouts"], d[l " overruns"], d[l " handshakes"]
			printf "%-6s GC cycles %d\n", ph, d["process gcs"] }' | sort -k2
}
sleep 5
for _ in $(seq "$rounds"); do
	counters >"$out/before"
	sleep "$phase"
	read_phase quiet "$out/before"
	[ "$clients" -eq 0 ] && continue
	counters >"$out/before"
	python3 scripts/http_load.py "$addr" "$clients" "$phase" >"$out/load.txt" 2>&1 &
	ld=$!
	wait $ld || { echo "http_load.py failed:" >&2; cat "$out/load.txt" >&2; exit 1; }
	ld=
	read_phase load "$out/before"
	sed 's/^/       /' "$out/load.txt"
done
