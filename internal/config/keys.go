package config

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
)

// unknownPlantKey explains a key that kind does not have.
func unknownPlantKey(name, key string, p Plant) string {
	if hint, ok := movedPlantKeys[name+"."+key]; ok {
		return hint
	}
	var owners []string
	for _, k := range kinds {
		if k.name != name && slices.Contains(tomlKeys(reflect.TypeOf(k.new()), ""), key) {
			owners = append(owners, quote(k.name))
		}
	}
	if len(owners) > 0 {
		return fmt.Sprintf("not a key of plant kind %q; it belongs to kind %s", name, strings.Join(owners, " and "))
	}
	own := tomlKeys(reflect.TypeOf(p), "")
	msg := fmt.Sprintf("unknown key of plant kind %q", name)
	if near := Closest(key, own); near != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", near)
	}
	return msg + "; its keys: " + strings.Join(own, ", ")
}

// movedPlantKeys are keys of earlier layouts that a kind no longer has,
// with what to write instead.
var movedPlantKeys = map[string]string{
	"emio.motors": "the Emio has one motor per servo ID: remove motors, the count is len(ids)",
}

// movedKeys are keys outside [link.plant] of earlier layouts, with where
// they went.
var movedKeys = []struct{ prefix, hint string }{
	{"link.side", "moved: write it as side in [link.plant.camera] (the marker frame belongs to the Emio's camera)"},
	{"link.sort", "moved: write it as sort in [link.plant.camera]"},
	{"link.camera.", "moved: the camera is the Emio's; rename the table [link.camera] to [link.plant.camera]"},
	{"link.udp.nb_markers", "moved: write it as nb_markers in [link.plant] (the plant says how long its measurement is)"},
}

// undecodedErrors turns the keys the decoder did not use into errors.
func undecodedErrors(keys []toml.Key) []error {
	names := make([]string, 0, len(keys))
	for _, k := range keys {
		if len(k) >= 2 && k[0] == "link" && k[1] == "plant" {
			continue // checked per link by decodePlant
		}
		names = append(names, k.String())
	}
	sort.Strings(names)
	var errs []error
	seenTable := map[string]bool{}
	for _, n := range names {
		msg := unknownKey(strings.Split(n, "."))
		for _, m := range movedKeys {
			if n == strings.TrimSuffix(m.prefix, ".") || strings.HasSuffix(m.prefix, ".") && strings.HasPrefix(n, m.prefix) {
				msg = m.hint
				break
			}
		}
		// One error for a whole moved table, not one per key.
		if n == "link.camera" || strings.HasPrefix(n, "link.camera.") {
			if seenTable["link.camera"] {
				continue
			}
			seenTable["link.camera"] = true
			n = "link.camera"
		}
		errs = append(errs, fmt.Errorf("%w: %s %s", ErrConfig, show(n), msg))
	}
	return errs
}

// unknownKey explains a key outside [link.plant] that the file should not
// have: the nearest key of its table, and the table's keys.
func unknownKey(path []string) string {
	t := reflect.TypeOf(fileConfig{})
	for _, seg := range path[:len(path)-1] {
		f, ok := fieldByTag(t, seg)
		if !ok {
			return "unknown key (its table is unknown too)"
		}
		if t = f.Type; t.Kind() == reflect.Slice {
			t = t.Elem() // [[link]]
		}
		if !isStructTable(t) {
			return "unknown key"
		}
	}
	var keys []string
	for i := range t.NumField() {
		if name := tagName(t.Field(i)); name != "" {
			keys = append(keys, name)
		}
	}
	msg := "unknown key"
	if near := Closest(path[len(path)-1], keys); near != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", near)
	}
	table := "the top level"
	if len(path) > 1 {
		table = "[" + strings.Join(path[:len(path)-1], ".") + "]"
	}
	return fmt.Sprintf("%s; the keys of %s: %s", msg, table, strings.Join(keys, ", "))
}

// unknownKeys lists the keys of m (a decoded TOML table) that the struct
// type t does not have, as dotted paths, descending into sub-tables.
func unknownKeys(m map[string]any, t reflect.Type, prefix string) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []string
	for _, k := range sortedKeys(m) {
		f, ok := fieldByTag(t, k)
		if !ok {
			out = append(out, prefix+k)
			continue
		}
		if sub, isTable := m[k].(map[string]any); isTable && isStructTable(f.Type) {
			out = append(out, unknownKeys(sub, f.Type, prefix+k+".")...)
		}
	}
	return out
}

// tomlKeys lists the dotted keys of a struct type, sub-tables included.
func tomlKeys(t reflect.Type, prefix string) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name := tagName(f)
		if name == "" {
			continue
		}
		out = append(out, prefix+name)
		if isStructTable(f.Type) {
			out = append(out, tomlKeys(f.Type, prefix+name+".")...)
		}
	}
	return out
}

func fieldByTag(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		if f := t.Field(i); tagName(f) == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func tagName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
	if name == "-" || name == "" {
		return ""
	}
	return name
}

// isStructTable reports whether a field is a TOML table of its own (a
// struct that does not decode itself from a value, as Duration does).
func isStructTable(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return false
	}
	_, textual := reflect.New(t).Interface().(interface{ UnmarshalText([]byte) error })
	return !textual
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Closest returns the candidate nearest to s, ignoring case, when it is a
// typo of it: at most two edits away, and fewer edits than s has letters
// (a short word is close to anything). Otherwise "". The configuration's
// keys and the command line's commands use it for "did you mean".
func Closest(s string, candidates []string) string {
	best, bestD := "", 3
	for _, c := range candidates {
		if d := editDistance(strings.ToLower(s), strings.ToLower(c)); d < bestD && d < len([]rune(s)) {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Damerau–Levenshtein distance (optimal string
// alignment) between a and b: insertions, deletions, substitutions and
// swaps of two neighbours count one each.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
