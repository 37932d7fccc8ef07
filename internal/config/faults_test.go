package config

import (
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/internal/fault"
	"github.com/labbridge/bridge/internal/testutil"
	"github.com/labbridge/bridge/simulink"
)

// A Simulink host whose every reply has the wrong size: the link never
// completes its handshake, and that is said once in the log (not once per
// reply), in /healthz and in the faults, naming the size a reply must have.
func TestWrongSizeRepliesAreAFault(t *testing.T) {
	c := parseDefault(t, func(l *LinkTable, p *EmioPlant) {
		p.Camera.Kind, l.Clock = "none", "timer"
	})
	var logs testutil.SyncBuffer
	env := testEnv(t)
	env.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	env.Faults = &simulink.Faults{WrongSize: 1, Seed: 1}
	b, err := c.Links[0].Build(env)
	if err != nil {
		t.Fatal(err)
	}
	sup := serveBuilt(t, b)
	// Both, whatever else a busy machine adds (an overrun).
	active := func() map[string]bool {
		m := map[string]bool{}
		for _, a := range b.Faults.Active() {
			m[a.Name] = true
		}
		return m
	}
	testutil.WaitFor(t, "both faults", func() bool { a := active(); return a["no_partner"] && a["wrong_size"] })
	if s := b.Link.State(); s != bridge.Handshaking {
		t.Errorf("state %v, want handshaking", s)
	}
	err = sup.Health()
	if !errors.Is(err, fault.ErrFault) || !strings.Contains(err.Error(), "replies of the wrong size from the Simulink host were ignored (want 40 bytes)") {
		t.Errorf("health %v", err)
	}
	if n := strings.Count(logs.String(), `msg="replies of the wrong size from the Simulink host were ignored"`); n != 1 {
		t.Errorf("%d start lines for the wrong-size fault, want 1:\n%s", n, logs.String())
	}
}

// gathered returns the value of the series of family name whose labels
// include want, and whether it exists.
func gathered(t *testing.T, reg *prometheus.Registry, name string, want map[string]string) (float64, bool) {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if labels[k] != v {
					continue next
				}
			}
			switch {
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue(), true
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue(), true
			}
		}
	}
	return 0, false
}

// A servo that goes silent and one that overheats, on the simulated bus:
// each is a fault naming the servo by its ID (never the broadcast ID), said
// once in the log, in /healthz and in the metrics, with the servo's
// temperature and hardware error exported; the overheating also stops the
// Emio until a person resumes it.
func TestServoFaultsNameTheServo(t *testing.T) {
	c := parseDefault(t, func(l *LinkTable, p *EmioPlant) {
		p.Camera.Kind, l.Clock = "none", "timer"
	})
	var logs testutil.SyncBuffer
	env, reg := vrepEnv(t)
	env.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	b, err := c.Links[0].Build(env)
	if err != nil {
		t.Fatal(err)
	}
	sup := serveBuilt(t, b)
	testutil.WaitFor(t, "running", func() bool { return b.Link.State() == bridge.Running })
	testutil.WaitFor(t, "every servo's temperature", func() bool {
		for id := range 4 {
			if _, ok := gathered(t, reg, "bridge_servo_temperature_celsius", map[string]string{"link": "emio", "servo": strconv.Itoa(id)}); !ok {
				return false
			}
		}
		return true
	})
	if err := b.Simulated.SetMissing(1, true); err != nil {
		t.Fatal(err)
	}
	// The silent servo's reads fail until the link gives the device up
	// (three in a row) and goes degraded. On a busy machine a whole reply
	// can come late, and the miss is then the first servo's: which servo
	// is blamed is the emio package's test (TestServoStatusOverPTY, with a
	// margin no busy machine outlasts). Here: the fault starts, names a
	// servo of the link, and the misses are exported per servo.
	testutil.WaitFor(t, "servo_silent started", func() bool {
		v, _ := gathered(t, reg, "bridge_faults_total", map[string]string{"link": "emio", "fault": "servo_silent"})
		return v >= 1
	})
	if !regexp.MustCompile(`msg="a servo does not answer; its last position is held" .*detail="servo [0-3](, [0-3])*"`).MatchString(logs.String()) {
		t.Errorf("no servo_silent start naming a servo of the link:\n%s", logs.String())
	}
	var missed float64
	for id := range 4 {
		v, _ := gathered(t, reg, "bridge_servo_missed_reads_total", map[string]string{"servo": strconv.Itoa(id)})
		missed += v
	}
	if missed == 0 {
		t.Error("no missed read exported")
	}
	if err := b.Simulated.SetMissing(1, false); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "running again", func() bool { return b.Link.State() == bridge.Running })
	// An overheated servo stops the Emio until a person resumes it: the
	// servo fault and the link's stop both say so.
	if err := b.Simulated.ForceOverheat(2); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "servo_hot", func() bool { _, ok := activeFault(b, "servo_hot"); return ok })
	a, _ := activeFault(b, "servo_hot")
	if !strings.HasPrefix(a.Detail, "servo 2: ") || !strings.Contains(a.Advice, "`bridge resume emio`, which reboots it") {
		t.Errorf("servo_hot detail %q, advice %q, want servo 2 named and the resume", a.Detail, a.Advice)
	}
	testutil.WaitFor(t, "the overheating bit exported", func() bool {
		v, _ := gathered(t, reg, "bridge_servo_hardware_error", map[string]string{"servo": "2", "error": "overheating"})
		return v == 1
	})
	if v, ok := gathered(t, reg, "bridge_fault_active", map[string]string{"link": "emio", "fault": "servo_hot"}); !ok || v != 1 {
		t.Errorf("bridge_fault_active{fault=servo_hot} = %v, %v", v, ok)
	}
	testutil.WaitFor(t, "stopped", func() bool { _, ok := activeFault(b, "stopped"); return ok })
	if a, _ := activeFault(b, "stopped"); !strings.Contains(a.Detail, "servo 2: overheating") || !strings.Contains(a.Detail, "`bridge resume emio`") {
		t.Errorf("stopped detail %q, want servo 2's overheating and the link's resume", a.Detail)
	}
	if err := sup.Health(); !strings.Contains(fmt.Sprint(err), "a servo is overheating (servo 2: ") {
		t.Errorf("health %v", err)
	}
	if strings.Contains(logs.String(), "ID 254") {
		t.Errorf("the broadcast ID in the log:\n%s", logs.String())
	}
	if n := strings.Count(logs.String(), `msg="a servo is overheating"`); n != 1 {
		t.Errorf("%d start lines for servo_hot, want 1", n)
	}
	if r := b.Simulated.Servo(2).Received(); r.Reboots != 0 {
		t.Errorf("servo 2 rebooted %d times without a person", r.Reboots)
	}
}

func activeFault(b *Built, name string) (fault.Active, bool) {
	for _, a := range b.Faults.Active() {
		if a.Name == name {
			return a, true
		}
	}
	return fault.Active{}, false
}
