package config

import (
	"context"
	"strings"
	"testing"
	"time"
)

// A bench link with an unknown partner or plant is refused before anything
// is built, naming the flag and what it accepts.
func TestRunBenchLinkRefuses(t *testing.T) {
	for _, tc := range []struct {
		partner, plant, want string
	}{
		{"somewhere", "sim", `-partner "somewhere": want process, builtin or external`},
		{"builtin", "arm", `"arm"`},
	} {
		_, err := RunBenchLink(context.Background(), LinkBench{Rate: 100, Duration: time.Second, Plant: tc.plant, Partner: tc.partner})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "bridge bench link: ") {
			t.Errorf("partner %q plant %q: %v, want an error saying %s", tc.partner, tc.plant, err, tc.want)
		}
	}
}
