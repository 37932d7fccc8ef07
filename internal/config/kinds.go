package config

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/plant"
)

// Plant is the [link.plant] table of one kind: its keys, decoded into the
// kind's own struct, and what the kind knows to do with them. The methods in
// lower case are the kind's contract with this package (kind_*.go).
type Plant interface {
	// Kind is the kind's name, the value of plant.kind.
	Kind() string
	// Layout is the shape of the plant's vectors, valid after validation.
	Layout() plant.Layout
	// Limits are the allowed range of each command element.
	Limits() []bridge.Limit
	// Clocks names the clocks, besides "timer", that this plant can pace
	// its link with.
	Clocks() []string
	// Simulated reports whether every device of the plant is simulated.
	Simulated() bool
	// Summary is one line for `bridge check`.
	Summary() string

	// defaults fills what the file left out; l is the plant's link.
	defaults(l *LinkTable)
	// validate reports every bad value with v.bad, keys relative to the
	// link ("plant.baud").
	validate(l *LinkTable, v *validator)
	// build makes the plant and what it needs (build.go).
	build(b *builder) (*parts, error)
}

// kind is one entry of the kinds table.
type kind struct {
	name string
	doc  string       // what the kind drives, for messages
	new  func() Plant // a table with nothing set, to decode into
}

// kinds lists every plant kind this build knows: adding a kind is a file
// with its table and this one line.
var kinds = [...]kind{
	{"sim", "in-memory motors with a linear marker model, no device at all", func() Plant { return &SimPlant{} }},
	{"emio", "the Emio: its Dynamixel servos and its marker camera, real or simulated", func() Plant { return &EmioPlant{} }},
	{"meca500", "a Mecademic Meca500 arm on its TCP control port, real or simulated", func() Plant { return &Meca500Plant{} }},
	{"vrep", "a robot in a V-REP or CoppeliaSim scene, over the seed's AZ socket or the ZMQ remote API, real or simulated", func() Plant { return &VREPPlant{} }},
}

// defaultKind is the kind of a link without a [link.plant] table.
const defaultKind = "sim"

// renamedKinds are kind names of earlier layouts and what they became.
var renamedKinds = map[string]string{"dynamixel": "emio"}

func findKind(name string) (kind, bool) {
	for _, k := range kinds {
		if k.name == name {
			return k, true
		}
	}
	return kind{}, false
}

func kindNames() string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = quote(k.name)
	}
	return strings.Join(names, " or ")
}

// kindList is the kinds for a message: "emio, meca500, vrep, sim".
func kindList() string {
	var names []string
	for _, k := range kinds {
		if k.name != defaultKind {
			names = append(names, k.name)
		}
	}
	// The in-memory plant last: the devices are what a table is for.
	return strings.Join(append(names, defaultKind), ", ")
}

// Kinds lists the plant kinds this build knows, with what each drives.
func Kinds() [][2]string {
	out := make([][2]string, len(kinds))
	for i, k := range kinds {
		out[i] = [2]string{k.name, k.doc}
	}
	return out
}

// decodePlant decodes one link's [link.plant] table into its kind's struct.
// Its keys are checked here, against the kind's, so that a key of another
// kind says which kind it belongs to; the TOML library's own list of
// undecoded keys cannot tell one link from another.
//
// A link without a [link.plant] table has the in-memory plant of
// defaultKind; a table without kind is refused, since its other keys
// belong to a kind the file does not say.
func decodePlant(md toml.MetaData, raw toml.Primitive, link string, present bool) (Plant, []error) {
	bad := func(format string, args ...any) []error {
		return []error{fmt.Errorf("%w: %s.plant%s", ErrConfig, link, fmt.Sprintf(format, args...))}
	}
	var keys map[string]any
	if err := md.PrimitiveDecode(raw, &keys); err != nil {
		return &SimPlant{}, bad(": %v", err)
	}
	name := defaultKind
	if _, ok := keys["kind"]; !ok && present {
		return &SimPlant{}, bad(".kind: missing; want one of %s", kindList())
	}
	if v, ok := keys["kind"]; ok {
		s, isString := v.(string)
		if !isString {
			return &SimPlant{}, bad(".kind = %s: want a string, %s", show(v), kindNames())
		}
		name = s
	}
	k, ok := findKind(name)
	if !ok {
		if to, renamed := renamedKinds[name]; renamed {
			return &SimPlant{}, bad(".kind = %q: this kind is now called %q; rename it (bridge.toml shows the layout)", name, to)
		}
		return &SimPlant{}, bad(".kind = %s: want %s", show(quote(name)), kindNames())
	}
	p := k.new()
	if err := md.PrimitiveDecode(raw, p); err != nil {
		if e, ok := mismatch(err, link+".plant.", "link.plant.", keys); ok {
			return p, []error{e}
		}
		return p, []error{decodeError(err)}
	}
	var errs []error
	for _, key := range unknownKeys(keys, reflect.TypeOf(p), "") {
		errs = append(errs, fmt.Errorf("%w: %s.plant.%s: %s", ErrConfig, link, show(key), unknownPlantKey(name, key, p)))
	}
	return p, errs
}
