#!/bin/sh
# send_timing.sh [DURATION]: the send timing of the embedded default
# (bridge run on bridge.toml, every device simulated, clock = "camera"),
# measured from the Simulink side by `bridge partner` with kernel receive
# timestamps, side by side in one run with the same configuration in
# emioapi's shape (clock = "frame": a tick on each frame event; lead = "0s":
# the datagram leaves when measured), on ports shifted by 100.
# Run it from the repository's root; it builds the bridge first.
set -eu
dur=${1:-60s}
out=$(mktemp -d)
go build -o "$out/bridge" ./cmd/bridge
b="$out/bridge"

# B: the old shape, on other ports.
sed -e 's/127.0.0.1:9310/127.0.0.1:9311/' \
    -e 's/:25000"/:25100"/' -e 's/:25001"/:25101"/' -e 's/:9090"/:9190"/' \
    -e 's/:25010"/:25110"/' -e 's/:25011"/:25111"/' -e 's/:9091"/:9191"/' \
    -e 's/:25020"/:25120"/' -e 's/:25021"/:25121"/' -e 's/:9092"/:9192"/' \
    -e '0,/^clock = "camera"/s//clock = "frame"/' \
    -e '0,/^lead = "auto"/s//lead = "0s"/' \
    -e '0,/^spin = "[^"]*"/s//spin = "0s"/' bridge.toml >"$out/old.toml"

partner() { # name config listen accept reply-to
	"$b" partner -config "$2" -link emio -listen "$3" -accept "$4" -reply-to "$5" -json >"$out/$1.partner" 2>"$out/$1.partner.log" &
}
partner new bridge.toml 127.0.0.1:25000 127.0.0.1:9090 127.0.0.1:25001
pn=$!
partner old "$out/old.toml" 127.0.0.1:25100 127.0.0.1:9190 127.0.0.1:25101
po=$!
sleep 1
"$b" run -config bridge.toml -duration "$dur" >"$out/new.run" 2>"$out/new.log" &
rn=$!
"$b" run -config "$out/old.toml" -duration "$dur" >"$out/old.run" 2>"$out/old.log" &
ro=$!
wait $rn $ro
kill -INT $pn $po
wait $pn $po || true
for k in new old; do
	echo "== $k ($( [ $k = new ] && echo 'clock = "camera", lead = "auto", spin = "auto"' || echo 'clock = "frame", lead = "0s"'))"
	grep '^partner: send interval' "$out/$k.partner" || true
	tail -n 1 "$out/$k.partner"
	grep -A 2 '^emio ' "$out/$k.run" | tail -n 2
done
echo "(outputs in $out)"
