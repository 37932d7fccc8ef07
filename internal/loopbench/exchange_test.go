package loopbench

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestRunExchanges(t *testing.T) {
	n := 0
	fail := errors.New("no ports")
	rep, err := RunExchanges(context.Background(), ExchangeConfig{Count: 10, Stop: func(err error) bool { return n == 8 }}, func() error {
		n++
		if n%4 == 0 {
			return fail
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Exchanges != 6 || rep.Failures != 2 || rep.Errors["no ports"] != 2 || rep.Stopped != "no ports" || rep.RTT.Count != 6 {
		t.Errorf("%+v", rep)
	}
	var b strings.Builder
	rep.WriteText(&b, "az")
	if !strings.Contains(b.String(), "az: 6 exchanges") || !strings.Contains(b.String(), "2× no ports") {
		t.Errorf("%s", b.String())
	}
	if _, err := RunExchanges(context.Background(), ExchangeConfig{}, nil); !errors.Is(err, ErrConfig) {
		t.Errorf("no duration nor count: %v", err)
	}
}

func TestParseTimeWait(t *testing.T) {
	table := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:81BB 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 100 0 0 10 0
   1: 0100007F:9C40 0100007F:81BB 06 00000000:00000000 03:00000F2B 00000000     0        0 0 3 0000000000000000
   2: 0100007F:9C41 0100007F:81BB 06 00000000:00000000 03:00000F2B 00000000     0        0 0 3 0000000000000000
   3: 0100007F:9C42 0100007F:1F90 06 00000000:00000000 03:00000F2B 00000000     0        0 0 3 0000000000000000
`
	if n := parseTimeWait(strings.NewReader(table), 33211); n != 2 {
		t.Errorf("%d in TIME_WAIT toward 33211, want 2", n)
	}
	if n := parseTimeWait(strings.NewReader(table), 0); n != 3 {
		t.Errorf("%d in TIME_WAIT, want 3", n)
	}
}
