package bridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// The link state lines carry the README's words (TIMEOUT, RECONNECTED) in
// status and in the message, with from, to and cause unchanged, and no
// err attribute when there is no error.
func TestEmitSaysTheReadmeStatus(t *testing.T) {
	var buf bytes.Buffer
	s := NewSupervisor(SupervisorConfig{Logger: slog.New(slog.NewJSONHandler(&buf, nil))})
	e := &linkEntry{}
	events := []Event{
		{Link: "emio", From: Starting, To: Handshaking, Cause: CauseStart},
		{Link: "emio", From: Handshaking, To: Running, Cause: CauseHandshake},
		{Link: "emio", From: Running, To: Handshaking, Cause: CausePartnerLost},
		{Link: "emio", From: Handshaking, To: Running, Cause: CauseHandshake},
		{Link: "emio", From: Running, To: Degraded, Cause: CauseDeviceError, Err: errors.New("emio: port closed")},
	}
	for _, ev := range events {
		s.emit(e, ev)
	}
	var lines []map[string]any
	for l := range strings.SplitSeq(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		lines = append(lines, m)
	}
	if len(lines) != len(events) {
		t.Fatalf("%d lines for %d events: %s", len(lines), len(events), buf.String())
	}
	want := []struct{ status, msg string }{
		{"HANDSHAKING", "link emio: HANDSHAKING: waiting for the Simulink host"},
		{"", "link emio: handshake done"},
		{"TIMEOUT", "link emio: TIMEOUT: the Simulink host stopped answering"},
		{"RECONNECTED", "link emio: RECONNECTED: the Simulink host answers again"},
		{"", "link emio: degraded"},
	}
	for i, m := range lines {
		ev := events[i]
		if m["event"] != "link state" || m["link"] != "emio" || m["from"] != ev.From.String() || m["to"] != ev.To.String() || m["cause"] != ev.Cause {
			t.Errorf("line %d: machine keys changed: %v", i, m)
		}
		if st, _ := m["status"].(string); st != want[i].status {
			t.Errorf("line %d: status %q, want %q", i, st, want[i].status)
		}
		if msg, _ := m["msg"].(string); !strings.HasPrefix(msg, want[i].msg) {
			t.Errorf("line %d: msg %q, want it to start with %q", i, msg, want[i].msg)
		}
		if _, ok := m["err"]; ok != (ev.Err != nil) {
			t.Errorf("line %d: err attribute %v for error %v", i, m["err"], ev.Err)
		}
	}
}
