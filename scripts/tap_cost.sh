#!/usr/bin/env bash
# tap_cost.sh [DURATION]: what the telemetry tap costs, and whether a
# recorder keeps up. One `bridge sim` runs six links at 1 kHz on in-memory
# plants (kind = "sim", each with its built-in partner on free loopback
# ports): t1, t2, t3 with the tap on, u1, u2, u3 with it off, side by side
# in one process. `bridge record` receives the three taps for DURATION
# (default 10m). At the end: each link's tick lateness p99 and max over the
# last minute (from /metrics), the tap's packets and drops, the recorder's
# summary (losses from the RTP sequence numbers), its CPU time and peak
# memory, the sizes of the files it wrote (a CSV per link, the MAT-file,
# the pcap), and, with GNU Octave, the MAT-file loaded.
# Run it from the repository's root; it builds the bridge first.
set -euo pipefail
dur=${1:-10m}
W=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$W"' EXIT
go build -o "$W/bridge" ./cmd/bridge
port=$((19700 + $$ % 200))
tapport=$((5100 + $$ % 200))
{
	printf '[service]\nmetrics = "127.0.0.1:%d"\n' "$port"
	i=0
	for l in t1 t2 t3 u1 u2 u3; do
		# Ports of its own (-ephemeral moves them to free ones anyway).
		printf '\n[[link]]\nname = "%s"\nrate_hz = 1000\n[link.udp]\nremote = "127.0.0.1:%d"\nbind = "127.0.0.1:%d"\nlisten = "127.0.0.1:%d"\n' \
			"$l" $((26000 + i)) $((26100 + i)) $((26200 + i))
		if [[ $l == t* ]]; then printf '[link.tap]\naddress = "127.0.0.1:%d"\n' "$tapport"; fi
		i=$((i + 1))
	done
} >"$W/six.toml"
"$W/bridge" check -config "$W/six.toml" >/dev/null
/usr/bin/time -v -o "$W/record.time" "$W/bridge" record -listen "127.0.0.1:$tapport" -out "$W/run.mat" \
	-pcap "$W/run.pcap" -duration "$dur" >"$W/record.out" 2>"$W/record.err" &
rec=$!
sleep 0.5
"$W/bridge" sim -config "$W/six.toml" -ephemeral >"$W/sim.out" 2>&1 &
sim=$!
wait $rec
echo "== tick lateness over the last minute (p99, max), tap on (t) and off (u)"
curl -s "http://127.0.0.1:$port/metrics" |
	awk '/^bridge_loop_lateness_quantile_seconds\{.*quantile="0.99"/ { match($0, /link="[^"]*"/); l = substr($0, RSTART+6, RLENGTH-7); p99[l] = $2 }
	     /^bridge_loop_lateness_max_seconds\{/ { match($0, /link="[^"]*"/); l = substr($0, RSTART+6, RLENGTH-7); mx[l] = $2 }
	     /^bridge_tap_(packets|dropped)_total\{/ { print }
	     END { for (l in p99) printf "%-3s p99 %7.1f µs  max %8.1f µs\n", l, p99[l]*1e6, mx[l]*1e6 }' | sort
kill $sim; wait $sim 2>/dev/null || true
echo "== bridge record"
cat "$W/record.out"
grep -E 'User time|System time|Elapsed|Maximum resident' "$W/record.time"
echo "== files"
ls -l "$W"/run.* | awk '{ printf "%12d  %s\n", $5, $NF }'
if command -v octave-cli >/dev/null; then
	echo "== GNU Octave"
	octave-cli --no-gui --norc --quiet --eval "s = load('$W/run.mat'); for l = fieldnames(s)', printf('%s: %d rows, %d fields, lateness p99 %.1f us\n', l{1}, numel(s.(l{1}).time_s), numel(fieldnames(s.(l{1}))), prctile(s.(l{1}).lateness_us, 99)); end" 2>&1 | grep -v execution_exception
fi
