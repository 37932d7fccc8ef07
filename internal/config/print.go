package config

import (
	"bytes"
	"encoding"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	defaultconfig "github.com/labbridge/bridge"
)

// Writing a configuration back as TOML: `bridge config -print` shows the
// values a bridge runs with, defaults filled in, and `bridge init` writes a
// file to edit. Both carry the comments of the embedded bridge.toml, which
// documents every key, so that the file says what each value means.

// commentColumn is where a key's comment starts, as in bridge.toml.
const commentColumn = 30

// Notes are the comments of a commented bridge.toml, by key: what Write
// puts after each key. The key is the table path and the key name
// ("link.udp.remote"); keys of a plant table, or of a controller table,
// carry their kind ("link.plant@emio.port",
// "link.partner.controller@jacobian.alpha") since kinds share key names
// with other meanings.
type Notes map[string][]string

// DefaultNotes are the comments of the embedded bridge.toml.
func DefaultNotes() Notes { return ParseNotes(defaultconfig.TOML()) }

// ParseNotes reads the comments of a bridge.toml: the comment after a key
// and the comment lines indented under it. The first comment of a key wins
// (the default's first link documents the keys the others repeat).
func ParseNotes(data []byte) Notes {
	lines := strings.Split(string(data), "\n")
	// A link's own keys (rate_hz, clock, …) are documented for its kind of
	// plant, which its [link.plant] table names further down: find each
	// link's kind first.
	var kinds []string
	table := ""
	for _, line := range lines {
		code, _ := splitComment(line)
		code = strings.TrimSpace(code)
		if strings.HasPrefix(code, "[") {
			table = strings.Trim(code, "[]")
			if table == "link" {
				kinds = append(kinds, "")
			}
			continue
		}
		if key, value, ok := strings.Cut(code, "="); ok && table == "link.plant" && strings.TrimSpace(key) == "kind" && len(kinds) > 0 {
			kinds[len(kinds)-1] = strings.Trim(strings.TrimSpace(value), `"`)
		}
	}
	notes := make(Notes)
	var plantKind, ctrlKind, last string
	table, link := "", -1
	// add records a note unless the key has one: the first comment wins, its
	// continuation lines too.
	add := func(key, comment string) {
		last = ""
		if _, seen := notes[key]; seen {
			return
		}
		notes[key] = nil
		if comment != "" {
			notes[key] = []string{comment}
		}
		last = key
	}
	for _, line := range lines {
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "":
			last = ""
		case strings.HasPrefix(trimmed, "#"):
			// A comment indented under a key continues the key's.
			if last != "" && strings.HasPrefix(line, " ") {
				notes[last] = append(notes[last], strings.TrimSpace(trimmed[1:]))
			} else {
				last = ""
			}
		case strings.HasPrefix(trimmed, "["):
			code, comment := splitComment(trimmed)
			table = strings.Trim(strings.TrimSpace(code), "[]")
			if table == "link" {
				link++
				plantKind, ctrlKind = kinds[link], ""
			}
			add(noteKey(table, "", plantKind, ctrlKind), comment)
		default:
			code, comment := splitComment(line)
			key, value, ok := strings.Cut(code, "=")
			if !ok {
				last = ""
				continue
			}
			key, value = strings.TrimSpace(key), strings.Trim(strings.TrimSpace(value), `"`)
			if key == "kind" && table == "link.partner.controller" {
				ctrlKind = value
			}
			add(noteKey(table, key, plantKind, ctrlKind), comment)
		}
	}
	for k, v := range notes {
		if len(v) == 0 {
			delete(notes, k)
		}
	}
	return notes
}

// noteKey is the key of a note: the table path and key ("" for the
// table's header), with the kind for the keys whose meaning depends on it.
func noteKey(table, key, plantKind, ctrlKind string) string {
	path := table
	switch {
	case key == "kind":
		return table + ".kind"
	case table == "link":
		path = "link@" + plantKind
	case table == "link.plant" || strings.HasPrefix(table, "link.plant."):
		path = "link.plant@" + plantKind + strings.TrimPrefix(table, "link.plant")
	case table == "link.partner.controller":
		path = table + "@" + ctrlKind
	}
	switch {
	case key == "":
		return path
	case path == "":
		return key
	}
	return path + "." + key
}

// splitComment cuts a TOML line at its comment: the first # outside a
// string.
func splitComment(line string) (code, comment string) {
	var quote byte
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0 && c == '\\' && quote == '"':
			i++
		case quote != 0 && c == quote:
			quote = 0
		case quote == 0 && (c == '"' || c == '\''):
			quote = c
		case quote == 0 && c == '#':
			return line[:i], strings.TrimSpace(line[i+1:])
		}
	}
	return line, ""
}

// Write writes c as a bridge.toml: every value c holds, defaults filled in,
// each key with its note. header is written first, as comment lines. What
// Write writes, Parse reads back to the same configuration.
func (c *Config) Write(w io.Writer, notes Notes, header string) error {
	p := &printer{notes: notes}
	for _, l := range strings.Split(strings.TrimRight(header, "\n"), "\n") {
		if l == "" {
			p.line("#")
		} else {
			p.line("# " + l)
		}
	}
	p.table("[service]", "service", "", "")
	p.fields("service", reflect.ValueOf(c.Service), "", "")
	for _, l := range c.Links {
		kind := ""
		if l.Plant != nil {
			kind = l.Plant.Kind()
		}
		p.table("[[link]]", "link", kind, "")
		p.key("link", "name", l.Name, kind, "")
		p.key("link", "rate_hz", l.RateHz, kind, "")
		p.key("link", "apply", l.Apply, kind, "")
		p.key("link", "halt", l.Halt, kind, "")
		p.key("link", "window_margin", l.Margin, kind, "")
		p.key("link", "clock", l.Clock, kind, "")
		p.table("[link.loop]", "link.loop", kind, "")
		p.fields("link.loop", reflect.ValueOf(l.Loop), kind, "")
		p.table("[link.udp]", "link.udp", kind, "")
		p.fields("link.udp", reflect.ValueOf(l.UDP), kind, "")
		p.table("[link.tap]", "link.tap", kind, "")
		p.fields("link.tap", reflect.ValueOf(l.Tap), kind, "")
		p.table("[link.shadow]", "link.shadow", kind, "")
		p.key("link.shadow", "enabled", l.Shadow.Enabled, kind, "")
		p.key("link.shadow", "hold", l.Shadow.Hold, kind, "")
		p.key("link.shadow", "clear", l.Shadow.Clear, kind, "")
		if len(l.Shadow.Threshold) > 0 {
			// A table of the plant's fields: the reflecting printer writes
			// no maps.
			p.table("[link.shadow.threshold]", "link.shadow.threshold", kind, "")
			for _, name := range slices.Sorted(maps.Keys(l.Shadow.Threshold)) {
				p.key("link.shadow.threshold", name, l.Shadow.Threshold[name], kind, "")
			}
		}
		if l.Plant != nil {
			p.table("[link.plant]", "link.plant", kind, "")
			p.fields("link.plant", reflect.ValueOf(l.Plant), kind, "")
		}
		p.table("[link.partner]", "link.partner", kind, "")
		p.key("link.partner", "delay", l.Partner.Delay, kind, "")
		p.table("[link.partner.controller]", "link.partner.controller", kind, "")
		// A controller's table holds the keys of its kind only: the others
		// are zero and would be refused.
		ctrl := l.Partner.Controller
		p.key("link.partner.controller", "kind", ctrl.Kind, "", "")
		cv := reflect.ValueOf(ctrl)
		for i := range cv.NumField() {
			name := tagName(cv.Type().Field(i))
			if name == "kind" || cv.Field(i).IsZero() || (cv.Field(i).Kind() == reflect.Slice && cv.Field(i).Len() == 0) {
				continue
			}
			p.key("link.partner.controller", name, cv.Field(i).Interface(), "", ctrl.Kind)
		}
	}
	if p.err != nil {
		return fmt.Errorf("config: write: %w", p.err)
	}
	_, err := w.Write(p.buf.Bytes())
	return err
}

// unwritten is a plant whose defaults fill keys that its file must not
// set (a V-REP scene over the AZ protocol has no ZMQ keys).
type unwritten interface{ unwritten() []string }

// printer accumulates the file; the first error stops it.
type printer struct {
	buf   bytes.Buffer
	notes Notes
	err   error
}

func (p *printer) line(s string) { p.buf.WriteString(s + "\n") }

// table starts a table; path and the kinds find its header's note.
func (p *printer) table(header, path, plantKind, ctrlKind string) {
	if p.buf.Len() > 0 {
		p.line("")
	}
	if note := p.notes[noteKey(path, "", plantKind, ctrlKind)]; len(note) > 0 && path != "link" {
		header += strings.Repeat(" ", max(commentColumn-len(header), 1)) + "# " + note[0]
	}
	p.line(header)
}

// fields writes the keys of struct v (table path), then its tables.
func (p *printer) fields(path string, v reflect.Value, plantKind, ctrlKind string) {
	for v.Kind() == reflect.Interface {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	if v.Kind() == reflect.Pointer && v.IsNil() {
		return
	}
	var skip []string
	if u, ok := v.Interface().(unwritten); ok {
		skip = u.unwritten()
	}
	for v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	t := v.Type()
	var tables []int
	for i := range t.NumField() {
		f := t.Field(i)
		name := tagName(f)
		if name == "" || slices.Contains(skip, name) {
			continue
		}
		if isStructTable(f.Type) {
			tables = append(tables, i)
			continue
		}
		fv := v.Field(i)
		// Nil is "not set": the key stays out and keeps its meaning.
		if (fv.Kind() == reflect.Pointer || fv.Kind() == reflect.Interface || fv.Kind() == reflect.Slice) && fv.IsNil() {
			continue
		}
		p.key(path, name, fv.Interface(), plantKind, ctrlKind)
	}
	for _, i := range tables {
		fv := v.Field(i)
		if fv.Kind() == reflect.Pointer && fv.IsNil() {
			continue
		}
		sub := path + "." + tagName(t.Field(i))
		p.table("["+sub+"]", sub, plantKind, ctrlKind)
		p.fields(sub, fv, plantKind, ctrlKind)
	}
}

// key writes one key = value line with its note.
func (p *printer) key(table, name string, value any, plantKind, ctrlKind string) {
	if p.err != nil {
		return
	}
	text, err := encodeValue(value)
	if err != nil {
		p.err = fmt.Errorf("%s.%s: %w", table, name, err)
		return
	}
	s := name + " = " + text
	note := p.notes[noteKey(table, name, plantKind, ctrlKind)]
	if len(note) == 0 {
		p.line(s)
		return
	}
	pad := max(commentColumn-len([]rune(s)), 1)
	p.line(s + strings.Repeat(" ", pad) + "# " + note[0])
	for _, n := range note[1:] {
		p.line(strings.Repeat(" ", max(commentColumn, len([]rune(s))+1)) + "# " + n)
	}
}

// encodeValue is value as TOML writes it, the right side of a key = value
// line: the TOML library's own encoding, so that strings are escaped and
// floats keep a decimal point the way a decoder reads them back.
func encodeValue(value any) (string, error) {
	if m, ok := value.(encoding.TextMarshaler); ok {
		b, err := m.MarshalText()
		if err != nil {
			return "", err
		}
		value = string(b)
	}
	var b bytes.Buffer
	if err := toml.NewEncoder(&b).Encode(map[string]any{"v": value}); err != nil {
		return "", err
	}
	s := strings.TrimSpace(b.String())
	if !strings.HasPrefix(s, "v = ") {
		return "", fmt.Errorf("cannot write %v (%T) as one TOML value", value, value)
	}
	return strings.TrimPrefix(s, "v = "), nil
}
