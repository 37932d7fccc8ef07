#!/bin/sh
# exhaust.sh [DIR]: what hostile configuration files cost `bridge check`.
# It writes, in DIR (a new temporary folder by default), nesting bombs
# (100,000 [ or {a=, a [table] name or key of 100,000 dotted parts, arrays
# of tables a part deeper on each line), files at and above 1 MiB, 1 MiB
# files at the reader's limits (16,383 keys of 8 parts, arrays 31 deep),
# huge counts (motors, nb_markers, rate_hz, camera sizes) and 1 MiB lists
# (ids, j, jinv) in the shipped bridge.toml, and 300 links; then runs
# `bridge check` on each under /usr/bin/time -v, at most 8 GB of address
# space and 3 minutes, and prints one row per file: exit code, peak RSS,
# CPU seconds and the first line of the message. Run it from the
# repository's root; it needs python3 and GNU time.
set -eu
dir=${1:-$(mktemp -d)}
mkdir -p "$dir"
go build -o "$dir/bridge" ./cmd/bridge
python3 - "$dir" bridge.toml <<'PY'
import os, re, sys
d, base = sys.argv[1], open(sys.argv[2]).read()
MiB, N = 1 << 20, 100000
def w(name, s): open(os.path.join(d, name + ".toml"), "w").write(s)
def fill(name, entry, head="", most=None, tail=""):
    out, size, i = [head], len(head), 0
    while most is None or i < most:
        e = entry(i)
        if size + len(e) + len(tail) > MiB: break
        out.append(e); size += len(e); i += 1
    w(name, "".join(out) + tail)
def sub(old, new):
    assert base.count(old) == 1, old
    return base.replace(old, new)
def vec(n, v="0.5"): return "[" + ", ".join([v] * n) + "]"
w("bomb_arrays", "a = " + "[" * N + "\n")
w("bomb_tables", "a = " + "{a=" * N + "1" + "}" * N + "\n")
w("bomb_table_name", "[" + ".".join(["a"] * N) + "]\n")
w("bomb_array_of_tables", "[[" + ".".join(["a"] * N) + "]]\n")
w("bomb_dotted_key", ".".join(["a"] * N) + " = 1\n")
w("bomb_deeper_each_line", "".join("[[" + ".".join(["a"] * k) + "]]\n" for k in range(1, 448)))
w("size_1mib_comment", "#" * (MiB - 1) + "\n")
w("size_1mib_plus1", "#" * MiB + "\n")
fill("limit_flat_keys", lambda i: "k%d = 1\n" % i)
fill("limit_keys8", lambda i: "t%d%s = 1\n" % (i, ".a" * 7), most=16383)
fill("limit_keys8_arrays31", lambda i: "t%d%s = %s1%s\n" % (i, ".a" * 7, "[" * 31, "]" * 31), most=16383)
fill("limit_tables8", lambda i: "[t%d%s]\n" % (i, ".a" * 7), most=16383)
fill("limit_arrays31", lambda i: "%s1%s," % ("[" * 31, "]" * 31), head="a = [", tail="]\n")
w("count_sim_motors", '[[link]]\nname = "x"\n[link.plant]\nkind = "sim"\nmotors = 2000000000\n')
w("count_nb_markers", sub("nb_markers = 1 ", "nb_markers = 2000000000 "))
w("count_rate_hz", sub("rate_hz = 30 ", "rate_hz = 2000000000 "))
w("count_width", sub("width = 640 ", "width = 2000000000 "))
w("count_recv_buffer", base.replace("recv_buffer = 65536", "recv_buffer = 2000000000", 1))
n = (MiB - len(base) - 200) // 5
w("list_ids_1mib", sub("ids = [0, 1, 2, 3]", "ids = [" + ",".join(["1"] * (2 * n)) + "]"))
w("list_j_1mib", re.sub(r"\nj = \[[^\]]*\]", "\nj = " + vec(n), base, count=1))
w("list_jinv_1mib", re.sub(r"\njinv = \[[^\]]*\]", "\njinv = " + vec(n), base, count=1))
w("string_name_1mib", base.replace('name = "emio"', 'name = "' + "a" * (MiB - len(base) - 100) + '"', 1))
w("links_300", "".join('[[link]]\nname = "l%d"\n[link.udp]\nbind = "127.0.0.1:0"\nlisten = "127.0.0.1:0"\n[link.plant]\nkind = "sim"\n' % i for i in range(300)))
PY
printf 'file\tbytes\texit\tpeak_rss_kb\tcpu_s\tmessage\n'
for f in "$dir"/*.toml; do
	set +e
	/usr/bin/time -v -o "$f.time" timeout 180 prlimit --as=8000000000 "$dir/bridge" check -config "$f" >"$f.out" 2>&1
	rc=$?
	set -e
	rss=$(awk -F': ' '/Maximum resident/{print $2}' "$f.time")
	cpu=$(awk -F': ' '/User time/{u=$2} /System time/{s=$2} END{print u+s}' "$f.time")
	msg=$(head -n 1 "$f.out" | sed "s|^$dir/||" | cut -c1-160)
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$(basename "$f" .toml)" "$(wc -c <"$f")" "$rc" "$rss" "$cpu" "$msg"
done
