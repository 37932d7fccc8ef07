package logging_test

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/labbridge/bridge/internal/logging"
	"github.com/labbridge/bridge/internal/testutil"
)

func noTime(_ []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}

// Each line carries the priority of its level, with attributes and groups
// kept.
func TestPriorityPrefix(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(logging.NewJournal(&buf, func(w io.Writer) slog.Handler {
		return slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: noTime})
	})).With("link", "emio")
	log.Error("halt failed")
	log.Warn("no Simulink host answers", "fault", "no_partner")
	log.Info("running")
	log.WithGroup("servo").Debug("read", "id", 2)
	want := `<3>{"level":"ERROR","msg":"halt failed","link":"emio"}
<4>{"level":"WARN","msg":"no Simulink host answers","link":"emio","fault":"no_partner"}
<6>{"level":"INFO","msg":"running","link":"emio"}
<7>{"level":"DEBUG","msg":"read","link":"emio","servo":{"id":2}}
`
	if buf.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", buf.String(), want)
	}
}

// Lines from many goroutines never mix priorities (run with -race).
func TestConcurrentPriorities(t *testing.T) {
	var buf testutil.SyncBuffer
	log := slog.New(logging.NewJournal(&buf, func(w io.Writer) slog.Handler { return slog.NewTextHandler(w, nil) }))
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 200 {
				log.Warn("w")
				log.Error("e")
			}
		})
	}
	wg.Wait()
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if !(strings.HasPrefix(l, "<4>") && strings.Contains(l, "level=WARN")) && !(strings.HasPrefix(l, "<3>") && strings.Contains(l, "level=ERROR")) {
			t.Fatalf("line %q", l)
		}
	}
}

// Attached matches JOURNAL_STREAM against the file's device and inode.
func TestAttached(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "stream")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	same := fmt.Sprintf("%d:%d", st.Dev, st.Ino)
	for _, tc := range []struct {
		stream string
		want   bool
	}{
		{same, true},
		{fmt.Sprintf("%d:%d", st.Dev, st.Ino+1), false},
		{"", false},
		{"garbage", false},
		{"1:", false},
	} {
		if got := logging.Attached(f, tc.stream); got != tc.want {
			t.Errorf("Attached(%q) = %v, want %v", tc.stream, got, tc.want)
		}
	}
}
