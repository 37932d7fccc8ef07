package plant

// Field names a run of values in a measurement or command vector, with its
// unit: what a person reads in a status line or a recording's column names.
// The loop needs only the lengths.
type Field struct {
	Name string // "markers", "angles"
	Unit string // "mm", "rad"
	Len  int
}

// Layout is the shape of a plant's vectors: its measurement and its command,
// each a sequence of named fields. Every length of a link (datagram sizes,
// controller dimensions, limits) derives from it.
type Layout struct {
	Measure, Command []Field
}

// MeasureLen is the number of measured values.
func (l Layout) MeasureLen() int { return total(l.Measure) }

// CommandLen is the number of command values.
func (l Layout) CommandLen() int { return total(l.Command) }

// Find returns where the measured field name lies: its offset and length.
func (l Layout) Find(name string) (off, n int, ok bool) {
	for _, f := range l.Measure {
		if f.Name == name {
			return off, f.Len, true
		}
		off += f.Len
	}
	return 0, 0, false
}

func total(fs []Field) int {
	n := 0
	for _, f := range fs {
		n += f.Len
	}
	return n
}
