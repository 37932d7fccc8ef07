package logging

import (
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// attrs collects a record's attributes as both handlers of this package
// show them: the handler's own (WithAttrs, keys already qualified by their
// groups) then the record's, each group flattened into dotted keys, values
// resolved.
type attrs struct {
	own   []slog.Attr // from WithAttrs, qualified
	group string      // the WithGroup prefix, "a.b." ("" for none)
}

// with returns a copy holding as too.
func (a attrs) with(as []slog.Attr) attrs {
	c := attrs{own: append([]slog.Attr(nil), a.own...), group: a.group}
	for _, x := range as {
		c.own = append(c.own, slog.Attr{Key: a.group + x.Key, Value: x.Value})
	}
	return c
}

// in returns a copy whose later attributes are in group name.
func (a attrs) in(name string) attrs {
	return attrs{own: a.own, group: a.group + name + "."}
}

// each calls f with every attribute of r, flattened.
func (a attrs) each(r slog.Record, f func(key string, v slog.Value)) {
	for _, x := range a.own {
		flatten(x.Key, x.Value, f)
	}
	r.Attrs(func(x slog.Attr) bool {
		flatten(a.group+x.Key, x.Value, f)
		return true
	})
}

// flatten calls f with key and v resolved, or with each member of a group
// under "key.member".
func flatten(key string, v slog.Value, f func(string, slog.Value)) {
	v = v.Resolve()
	if v.Kind() != slog.KindGroup {
		f(key, v)
		return
	}
	for _, m := range v.Group() {
		k := m.Key
		if key != "" {
			k = key + "." + k
		}
		flatten(k, m.Value, f)
	}
}

// text is a value as a person reads it: durations rounded, strings quoted
// only when they hold a space, a quote or an equals sign.
func text(v slog.Value) string {
	if v.Kind() == slog.KindDuration {
		d := v.Duration()
		switch {
		case d >= time.Second:
			d = d.Round(10 * time.Millisecond)
		case d >= time.Millisecond:
			d = d.Round(10 * time.Microsecond)
		}
		return d.String()
	}
	s := v.String()
	if strings.ContainsAny(s, " \t\n\"=") {
		return fmt.Sprintf("%q", s)
	}
	return s
}
