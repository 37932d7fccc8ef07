package config

import (
	"fmt"
	"strings"
	"sync"

	"github.com/labbridge/bridge/emio"
	"github.com/labbridge/bridge/internal/fault"
	"github.com/labbridge/bridge/metrics"
)

// servoWatch reads the servos' status for the fault probes and the metrics,
// off the tick: Motors.Servos is safe from any goroutine.
type servoWatch struct {
	m    *emio.Motors
	link string // the link's name, for the command the advice names
	mu   sync.Mutex
	st   []emio.ServoStatus
	// missed is each servo's missed reads at the last servo_silent poll.
	missed map[byte]uint64
}

func (w *servoWatch) read() []emio.ServoStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.st = w.m.Servos(w.st[:0])
	return append([]emio.ServoStatus(nil), w.st...)
}

// metrics is the servos' status for bridge_servo_*.
func (w *servoWatch) metrics(dst []metrics.ServoReading) []metrics.ServoReading {
	for _, s := range w.read() {
		dst = append(dst, metrics.ServoReading{ID: int(s.ID), TemperatureC: s.TemperatureC, LimitC: s.LimitC,
			HardwareError: uint8(s.HardwareError), Alerts: s.Alerts, MissedReads: s.MissedReads})
	}
	return dst
}

// hot lists the servos that overheat (emio.ServoStatus.Hot).
func (w *servoWatch) hot() (bool, string) {
	var parts []string
	for _, s := range w.read() {
		if s.Hot() {
			parts = append(parts, fmt.Sprintf("servo %d: %s", s.ID, s.Temperature()))
		}
	}
	return len(parts) > 0, strings.Join(parts, ", ")
}

// alerting lists the servos whose hardware error holds more than
// overheating (emio.ServoStatus.Faults; servo_hot says overheating).
func (w *servoWatch) alerting() (bool, string) {
	var parts []string
	for _, s := range w.read() {
		if hw := s.Faults(); hw != 0 {
			parts = append(parts, fmt.Sprintf("servo %d: %v", s.ID, hw))
		}
	}
	return len(parts) > 0, strings.Join(parts, ", ")
}

// missedReads is the servos' missed reads in all.
func (w *servoWatch) missedReads() uint64 {
	var n uint64
	for _, s := range w.read() {
		n += s.MissedReads
	}
	return n
}

// silent names the servos whose missed reads rose since the last call.
func (w *servoWatch) silent() string {
	st := w.read()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.missed == nil {
		w.missed = map[byte]uint64{}
	}
	var ids []string
	for _, s := range st {
		if s.MissedReads > w.missed[s.ID] {
			ids = append(ids, fmt.Sprint(s.ID))
		}
		w.missed[s.ID] = s.MissedReads
	}
	if len(ids) == 0 {
		return ""
	}
	return "servo " + strings.Join(ids, ", ")
}

// probes are the servos' faults. A hardware error stops the Emio until a
// person resumes it (emio: the link's "stopped" fault says it too), and
// the resume reboots the servo: the advice says so.
func (w *servoWatch) probes() []fault.Probe {
	resume := "run `bridge resume " + w.link + "`, which reboots it; the bridge reboots nothing by itself"
	return []fault.Probe{
		{
			Name: "servo_hot", Title: "a servo is overheating", Level: w.hot,
			Advice: "the servo turns its torque off to protect itself and the Emio stops: let it cool (about 20 minutes) and lighten its load, then " + resume,
		},
		{
			Name: "servo_alert", Title: "a servo reports a hardware error", Level: w.alerting,
			Advice: "the Emio stops: check the servo's load, its cable and the supply voltage, then " + resume,
		},
		{
			Name: "servo_silent", Title: "a servo does not answer; its last position is held",
			Advice: "check the servo cables of the daisy chain and the power supply",
			Events: w.missedReads, Detail: w.silent,
		},
	}
}
