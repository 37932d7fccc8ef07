package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	defaultconfig "github.com/labbridge/bridge"
)

// Every count and array length of a plant is checked against its range
// before anything is made from it: a huge value is refused with its key and
// its range, and the parse allocates no more than the file's size asks.
func TestHugeCountsAllocateNothing(t *testing.T) {
	const link = "[[link]]\nname = \"x\"\n[link.plant]\n"
	long := func(v string, n int) string { return "[" + strings.Repeat(v+", ", n-1) + v + "]" }
	cases := []struct{ doc, want string }{
		{link + "kind = \"sim\"\nmotors = 2000000000\n", `link "x".plant.motors = 2000000000: want 1..16`},
		{link + "kind = \"sim\"\nmotors = -2000000000\n", `link "x".plant.motors = -2000000000: want 1..16`},
		{link + "kind = \"sim\"\nnb_markers = 2000000000\n", `link "x".plant.nb_markers = 2000000000: want 0..16`},
		{link + "kind = \"sim\"\nmotors = 2000000000\nnb_markers = 2000000000\n", `link "x".plant.motors = 2000000000: want 1..16`},
		{link + "kind = \"emio\"\nport = \"sim\"\nnb_markers = 2000000000\n", `link "x".plant.nb_markers = 2000000000: want 0..16`},
		{link + "kind = \"emio\"\nport = \"sim\"\nids = " + long("1", 50000) + "\n", `link "x".plant.ids = [1 1 1`},
		{link + "kind = \"vrep\"\naddress = \"sim\"\nprotocol = \"zmq\"\njoints = " + long(`"/j"`, 50000) + "\n", `link "x".plant.joints = 50000: want 1..64 object paths`},
		{link + "kind = \"vrep\"\naddress = \"sim\"\nmeasure = " + long(`"sim_time"`, 50000) + "\n", `link "x".plant.measure = ["sim_time" "sim_time"`},
		{link + "kind = \"vrep\"\naddress = \"sim\"\ncommand = " + long(`"left_speed"`, 50000) + "\n", `link "x".plant.command = ["left_speed" "left_speed"`},
		{link + "kind = \"meca500\"\naddress = \"sim\"\n[link.plant.sim]\ninitial = " + long("0.0", 50000) + "\n", `plant.sim.initial`},
	}
	for _, c := range cases {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := Parse([]byte(c.doc))
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n got %v\nwant %s", show(c.doc), err, c.want)
		}
		// The decoder's own work on a file of up to a few hundred KB,
		// not gigabytes made from a count.
		if n := after.TotalAlloc - before.TotalAlloc; n > 256<<20 {
			t.Errorf("%s: parsing allocated %d MB", show(c.doc), n>>20)
		}
	}
}

// nestingBomb is `a = [[[…]]]` (or nested inline tables) depth deep: 200 KB
// of it once grew `bridge check` to 24 GB before any check.
func nestingBomb(depth int, table bool) []byte {
	if table {
		return []byte("a = " + strings.Repeat("{b=", depth) + "1" + strings.Repeat("}", depth) + "\n")
	}
	return []byte("a = " + strings.Repeat("[", depth) + strings.Repeat("]", depth) + "\n")
}

func TestNestingBombRefused(t *testing.T) {
	for _, table := range []bool{false, true} {
		for _, depth := range []int{MaxNesting + 1, 100000} {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := Parse(nestingBomb(depth, table))
			runtime.ReadMemStats(&after)
			want := "config: invalid configuration: line 1: arrays and inline tables nested more than 32 deep; a bridge configuration nests them at most 32 deep"
			if !errors.Is(err, ErrConfig) || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("depth %d (tables %v): got %v, want %s", depth, table, err, want)
			}
			if n := after.TotalAlloc - before.TotalAlloc; n > 16<<20 {
				t.Errorf("depth %d (tables %v): refusing allocated %d MB", depth, table, n>>20)
			}
		}
	}
	// At the limit the decoder gets the file, and says the key is unknown.
	_, err := Parse(nestingBomb(MaxNesting, false))
	if err == nil || !strings.Contains(err.Error(), "a unknown key") {
		t.Errorf("depth %d: got %v, want the decoder's unknown key", MaxNesting, err)
	}
}

// dottedBomb is a key or [table] name of parts parts, each a table deeper:
// 200 KB of one took more than 6 GB before any check.
func dottedBomb(parts int, sep, part, open, tail string) []byte {
	return []byte(open + strings.Repeat(part+sep, parts-1) + part + tail)
}

func TestDottedKeyBombRefused(t *testing.T) {
	bombs := map[string]func(parts int) []byte{
		"[table]":          func(n int) []byte { return dottedBomb(n, ".", "a", "[", "]\n") },
		"[[array]]":        func(n int) []byte { return dottedBomb(n, ".", "a", "[[", "]]\n") },
		"key":              func(n int) []byte { return dottedBomb(n, ".", "a", "", " = 1\n") },
		"quoted parts":     func(n int) []byte { return dottedBomb(n, ".", `"a"`, "", " = 1\n") },
		"blanks":           func(n int) []byte { return dottedBomb(n, " . ", "'a'", "[", "]\n") },
		"inline table key": func(n int) []byte { return dottedBomb(n, ".", "a", "x = {", " = 1}\n") },
	}
	want := "config: invalid configuration: line 1: a dotted key or [table] name of more than 8 parts"
	for name, bomb := range bombs {
		for _, parts := range []int{MaxKeyParts + 1, 100000} {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := Parse(bomb(parts))
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrConfig) || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("%s of %d parts: got %v, want %s", name, parts, err, want)
			}
			if n := after.TotalAlloc - before.TotalAlloc; n > 16<<20 {
				t.Errorf("%s of %d parts: refusing allocated %d MB", name, parts, n>>20)
			}
		}
		// At the limit the decoder gets the file.
		if err := checkBounds(bomb(MaxKeyParts)); err != nil {
			t.Errorf("%s of %d parts: %v", name, MaxKeyParts, err)
		}
	}
	// Arrays of tables a part deeper on each line, 200 KB of them.
	var deep strings.Builder
	for k := "a"; deep.Len() < 200<<10; k += ".a" {
		deep.WriteString("[[" + k + "]]\n")
	}
	if _, err := Parse([]byte(deep.String())); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "line 9: a dotted key") {
		t.Errorf("arrays of tables deeper on each line: got %v, want line 9 (9 parts) refused", err)
	}
	// Dots in values, strings and comments are not parts.
	const link = "[[link]]\nname = \"a\"\n"
	dots := strings.Repeat("a.", MaxKeyParts)
	for _, doc := range []string{
		link + "# " + dots + "\n",
		link + "window_margin = \"" + dots + "\"\n",
		link + "[link.udp]\nremote = '" + dots + "'\n",
		link + "x = \"\"\"\n" + dots + "\"\"\"\n",
		link + "x = [1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5, 9.5, 10.5, 11.5, 12.5, 13.5, 14.5, 15.5, 16.5, 17.5, 18.5, 19.5, 20.5, 21.5, 22.5, 23.5, 24.5, 25.5, 26.5, 27.5, 28.5, 29.5, 30.5, 31.5, 32.5, 33.5]\n",
		link + "x = {" + strings.Repeat("a = 1.5, ", 40) + "}\n",
		link + "x = 1979-05-27T07:32:00.999999-07:00\n",
	} {
		if err := checkBounds([]byte(doc)); err != nil {
			t.Errorf("%q: %v", doc, err)
		}
	}
}

// 1 MiB of short keys or [table] names at the part limit took the decoder
// 400 to 800 MB: more than MaxKeys of them are refused before it runs.
func TestManyKeysRefused(t *testing.T) {
	fill := func(entry func(i int) string) []byte {
		var b strings.Builder
		for i := 0; ; i++ {
			e := entry(i)
			if b.Len()+len(e) > MaxFileSize {
				return []byte(b.String())
			}
			b.WriteString(e)
		}
	}
	parts := strings.Repeat(".a", MaxKeyParts-1)
	bombs := map[string][]byte{
		"keys":       fill(func(i int) string { return fmt.Sprintf("k%d%s = 1\n", i, parts) }),
		"[tables]":   fill(func(i int) string { return fmt.Sprintf("[t%d%s]\n", i, parts) }),
		"[[arrays]]": fill(func(i int) string { return fmt.Sprintf("[[t%d%s]]\n", i, parts) }),
		"flat keys":  fill(func(i int) string { return fmt.Sprintf("k%d = 1\n", i) }),
		"inline tables": fill(func(i int) string {
			if i == 0 {
				return "a = ["
			}
			return "{a=1},"
		}),
	}
	want := fmt.Sprintf("more than %d keys and [table] names", MaxKeys)
	for name, doc := range bombs {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := Parse(doc)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), want) {
			t.Errorf("1 MiB of %s: got %v, want %s", name, err, want)
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > 16<<20 {
			t.Errorf("1 MiB of %s: refusing allocated %d MB", name, n>>20)
		}
	}
	// Values, strings, comments and arrays of arrays are no keys.
	doc := "[[link]]\nname = \"a\"\n" + strings.Repeat("# a = 1\n", MaxKeys) +
		"x = [" + strings.Repeat("[1],\n", MaxKeys) + "]\n" +
		"y = \"\"\"\n" + strings.Repeat("b = 2\n", MaxKeys) + "\"\"\"\n"
	if err := checkBounds([]byte(doc)); err != nil {
		t.Errorf("no keys but three: %v", err)
	}
}

// More than MaxLinks links are refused before any is decoded: 10,000 took
// 16,000 files and 670 MB in bridge sim before failing.
func TestManyLinksRefused(t *testing.T) {
	link := func(i int) string {
		return fmt.Sprintf("[[link]]\nname = \"l%d\"\n[link.udp]\nbind = \"127.0.0.1:0\"\nlisten = \"127.0.0.1:0\"\n[link.plant]\nkind = \"sim\"\n", i)
	}
	var b strings.Builder
	for i := range MaxLinks {
		b.WriteString(link(i))
	}
	c, err := Parse([]byte(b.String()))
	if err != nil || len(c.Links) != MaxLinks {
		t.Fatalf("%d links: %v", MaxLinks, err)
	}
	b.WriteString(link(MaxLinks))
	want := fmt.Sprintf("config: invalid configuration: %d [[link]] tables: want at most %d links in one bridge", MaxLinks+1, MaxLinks)
	if _, err := Parse([]byte(b.String())); !errors.Is(err, ErrConfig) || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("got %v, want %s", err, want)
	}
}

// Brackets inside strings and comments are not nesting; brackets after them
// still are.
func TestNestingCountsOnlyValues(t *testing.T) {
	deep := strings.Repeat("[", MaxNesting+1)
	const link = "[[link]]\nname = \"a\"\n"
	accepted := []string{
		link + "# " + deep + "\n",
		link + "apply = \"previous\" # " + deep + "\n",
		"# \" " + deep + "\n" + link,
		"[[link]]\nname = \"" + deep + "\"\n",
		"[[link]]\nname = '" + deep + "'\n",
		"[[link]]\nname = \"a\\\"" + deep + "\"\n",
		"[[link]]\nname = \"\"\"\n" + deep + "\n\"\"\"\n",
		"[[link]]\nname = '''\n" + deep + "\n'''\n",
		"[[link]]\nname = \"\"\"a\\\"\"\"" + deep + "\"\"\"\n",
		"[[link]]\nname = \"\"\"a\"\"\"\"\" # " + deep + "\n",
		"\"" + deep + "\" = 1\n",
		"'" + deep + "' = 1\n",
	}
	for _, doc := range accepted {
		if err := checkBounds([]byte(doc)); err != nil {
			t.Errorf("%q: %v", doc, err)
		}
	}
	refused := map[string]int{
		"name = \"[[[\" \na = " + deep:                 2,
		"name = 'x' # [[[\n\n\na = " + deep:            4,
		"name = \"\"\"\n\n\"\"\"\na = " + deep:         4,
		"name = \"a\\\\\" a = " + deep:                 1,
		"name = '''a'''''\na = " + deep:                2,
		"a = [" + strings.Repeat("{b = [", 16) + "1":   1,
		"a = \"\"\"x\\\n\"\"\"\nb = \"\"\nc = " + deep: 4,
	}
	for doc, line := range refused {
		err := checkBounds([]byte(doc))
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), fmt.Sprintf("line %d: arrays", line)) {
			t.Errorf("%q: got %v, want line %d", doc, err, line)
		}
	}
}

func TestFileSizeBounded(t *testing.T) {
	doc := []byte("[[link]]\nname = \"a\"\n" + strings.Repeat("#\n", MaxFileSize))
	want := fmt.Sprintf("config: invalid configuration: the file is %d bytes; a bridge configuration is at most 1 MiB (1048576 bytes)", len(doc))
	if _, err := Parse(doc); !errors.Is(err, ErrConfig) || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("got %v, want %s", err, want)
	}
	path := filepath.Join(t.TempDir(), "big.toml")
	if err := os.WriteFile(path, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFile(path); !errors.Is(err, ErrConfig) || !strings.HasPrefix(err.Error(), path+": "+want) {
		t.Errorf("got %v, want %s: %s", err, path, want)
	}
	// At the limit the file is read and parsed.
	doc = append([]byte("[[link]]\nname = \"a\"\n"), bytes.Repeat([]byte("#"), MaxFileSize-len("[[link]]\nname = \"a\"\n"))...)
	if _, err := Parse(doc); err != nil {
		t.Errorf("a file of exactly 1 MiB: %v", err)
	}
}

// max_timeouts periods shorter than 10 ms re-handshake on a host's
// scheduling hiccup: a warning says how long a pause is and what to set.
func TestTimeoutWarning(t *testing.T) {
	const link = "[[link]]\nname = \"x\"\n[link.plant]\nkind = \"sim\"\n"
	cases := []struct{ doc, want string }{
		{"[[link]]\nname = \"x\"\nrate_hz = 1000\n[link.udp]\nmax_timeouts = 3\n[link.plant]\nkind = \"sim\"\n",
			`link "x": udp.max_timeouts = 3 at rate_hz = 1000 re-handshakes when the partner pauses 3ms (3 periods of 1ms): a host's scheduling hiccup costs a re-handshake; set udp.max_timeouts = 10 or more to ride out a pause of 10ms`},
		{"[[link]]\nname = \"x\"\nrate_hz = 300\n[link.plant]\nkind = \"sim\"\n",
			`link "x": udp.max_timeouts = 3 at rate_hz = 300 re-handshakes when the partner pauses 9.999999ms (3 periods of 3.333333ms): a host's scheduling hiccup costs a re-handshake; set udp.max_timeouts = 4 or more to ride out a pause of 10ms`},
		{"[[link]]\nname = \"x\"\nrate_hz = 1000\n[link.udp]\nmax_timeouts = 10\n[link.plant]\nkind = \"sim\"\n", ""},
		{"[[link]]\nname = \"x\"\nrate_hz = 100\n[link.plant]\nkind = \"sim\"\n", ""},
		{link, ""},
	}
	for _, c := range cases {
		// loop.priority set: its own warning is TestPriorityWarning's.
		cfg, err := Parse([]byte(strings.Replace(c.doc, "[link.", "[link.loop]\npriority = 0\n[link.", 1)))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(cfg.Warnings(), "\n"); got != c.want {
			t.Errorf("%q:\n got %s\nwant %s", c.doc, got, c.want)
		}
	}
}

// A [link.plant] table without kind is refused, naming the kinds: its keys
// belong to a kind the file does not say. A link without the table has the
// in-memory plant, as `bridge check` prints.
func TestPlantKindMissing(t *testing.T) {
	const want = `config: invalid configuration: link "x".plant.kind: missing; want one of emio, meca500, vrep, sim`
	for _, doc := range []string{
		"[[link]]\nname = \"x\"\n[link.plant]\n",
		"[[link]]\nname = \"x\"\n[link.plant]\nmotors = 2\n",
		"[[link]]\nname = \"x\"\n[link.plant]\nport = \"sim\"\n",
		"[[link]]\nname = \"x\"\n[link.plant.camera]\nkind = \"sim\"\n",
	} {
		if _, err := Parse([]byte(doc)); !errors.Is(err, ErrConfig) || err.Error() != want {
			t.Errorf("%q:\n got %v\nwant %s", doc, err, want)
		}
	}
	c, err := Parse([]byte("[[link]]\nname = \"x\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if k := c.Links[0].Plant.Kind(); k != "sim" {
		t.Errorf("a link without [link.plant]: kind %q, want sim", k)
	}
}

// A link whose file sets no loop.priority runs at SCHED_OTHER, not at the
// SCHED_FIFO 80 of bridge.toml: a warning says so; a written 0 says nothing.
func TestPriorityWarning(t *testing.T) {
	const want = `link "x": loop.priority is not set, so the loop runs at normal priority (SCHED_OTHER), not at the SCHED_FIFO 80 of the shipped bridge.toml; set loop.priority = 80 in [link.loop] for real-time ticks, or 0 for normal priority without this warning`
	for doc, w := range map[string]string{
		"[[link]]\nname = \"x\"\n":                             want,
		"[[link]]\nname = \"x\"\n[link.loop]\ncpu = 1\n":       want,
		"[[link]]\nname = \"x\"\n[link.loop]\npriority = 0\n":  "",
		"[[link]]\nname = \"x\"\n[link.loop]\npriority = 80\n": "",
	} {
		cfg, err := Parse([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(cfg.Warnings(), "\n"); got != w {
			t.Errorf("%q:\n got %s\nwant %s", doc, got, w)
		}
		if p := cfg.Links[0].Loop.Priority; w != "" && p != 0 {
			t.Errorf("%q: priority %d, want 0 (SCHED_OTHER)", doc, p)
		}
	}
	c, err := Parse(defaultconfig.TOML())
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range c.Warnings() {
		if strings.Contains(w, "loop.priority") {
			t.Errorf("the shipped bridge.toml: %s", w)
		}
	}
}

// A SCHED_FIFO loop that spins most of its period warns: the kernel's
// real-time throttling would stop every loop on its CPU for 50 ms a second.
func TestSpinWarning(t *testing.T) {
	const want = `link "x": loop.spin = 800µs keeps the loop's CPU busy for 80 % of each 1ms period at SCHED_FIFO 80; real-time threads that use more than 95 % of a CPU are stopped by the kernel for 50 ms every second, every loop on that CPU with them; set spin = "auto" (at most a quarter of the period) or at most 500µs`
	for loop, w := range map[string]string{
		"priority = 80\nspin = \"800us\"\n": want,
		"priority = 80\nspin = \"500us\"\n": "",
		"priority = 80\nspin = \"auto\"\n":  "",
		"priority = 0\nspin = \"800us\"\n":  "", // SCHED_OTHER is not throttled
	} {
		cfg, err := Parse([]byte("[[link]]\nname = \"x\"\nrate_hz = 1000\n[link.udp]\nmax_timeouts = 10\n[link.loop]\n" + loop))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(cfg.Warnings(), "\n"); got != w {
			t.Errorf("%q:\n got %s\nwant %s", loop, got, w)
		}
	}
}
