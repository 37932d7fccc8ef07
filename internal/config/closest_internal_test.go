package config

import "testing"

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		d    int
	}{{"run", "run", 0}, {"rnu", "run", 1}, {"", "abc", 3}, {"kitten", "sitting", 3}, {"sim", "scan", 3}} {
		if d := editDistance(tc.a, tc.b); d != tc.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, d, tc.d)
		}
	}
}

// A typo gets its key back, whatever its case; a short word is no typo of
// anything, and nothing far is offered.
func TestClosest(t *testing.T) {
	keys := []string{"rate_hz", "startUDP", "run"}
	for _, tc := range []struct{ s, want string }{
		{"rate_hx", "rate_hz"}, {"startudp", "startUDP"}, {"rnu", "run"}, {"r", ""}, {"xyzzy", ""},
	} {
		if got := Closest(tc.s, keys); got != tc.want {
			t.Errorf("Closest(%q) = %q, want %q", tc.s, got, tc.want)
		}
	}
}
