package simserve

import (
	"context"
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/labbridge/bridge/internal/testutil"
	"github.com/labbridge/bridge/vrep"
)

// Each command's flags refuse what cannot run, naming the flag; good ones
// fill the settings.
func TestFlags(t *testing.T) {
	servos := func(fs *flag.FlagSet) func() error { return errOf(ServosFlags(fs)) }
	arm := func(fs *flag.FlagSet) func() error { return errOf(Meca500Flags(fs)) }
	scene := func(fs *flag.FlagSet) func() error { return errOf(VREPFlags(fs)) }
	for _, tc := range []struct {
		args []string
		read func(fs *flag.FlagSet) func() error
		want string
	}{
		{[]string{"-baud", "500000"}, servos, "bridge sim servos: -baud"},
		{[]string{"-firmware", "300"}, servos, "-firmware 300"},
		{[]string{"-duration", "-1s"}, arm, "bridge sim meca500: -duration -1s"},
		{[]string{"-protocol", "udp"}, scene, `bridge sim vrep: -protocol "udp": want az or zmq`},
		{[]string{"-fault", "explode"}, scene, `bridge sim vrep: -fault "explode"`},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		read := tc.read(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if err := read(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	read := VREPFlags(fs)
	if err := fs.Parse([]string{"-protocol", "zmq", "-every", "3", "-fault", "delay"}); err != nil {
		t.Fatal(err)
	}
	if v, err := read(); err != nil || v.Protocol != vrep.ZMQ || v.Every != 3 || v.Fault.String() != "delay" || !v.Commands {
		t.Errorf("VREPFlags: %+v, %v", v, err)
	}
}

// errOf is a flags reader's error alone.
func errOf[T any](read func() (T, error)) func() error {
	return func() error { _, err := read(); return err }
}

// A scene served for a while says where, and at the end what it served.
func TestVREPServe(t *testing.T) {
	var out testutil.SyncBuffer
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- VREP{Protocol: vrep.AZ, Listen: "127.0.0.1:0", Step: 50 * time.Millisecond}.Serve(ctx, nil, &out)
	}()
	testutil.WaitFor(t, "the banner", func() bool { return strings.Contains(out.String(), "Ctrl-C stops") })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "simulated V-REP scene (the seed's AZ socket) on 127.0.0.1:") || !strings.Contains(s, "served 0 exchange(s)") {
		t.Errorf("output:\n%s", s)
	}
}
