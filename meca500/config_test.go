package meca500_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/labbridge/bridge/meca500"
	"github.com/labbridge/bridge/plant"
)

// The defaults validate at every period the link allows, and every bad field
// comes back as its own FieldError, named by its key.
func TestConfigValidate(t *testing.T) {
	for _, period := range []time.Duration{0, time.Millisecond, 10 * time.Millisecond, 40 * time.Millisecond} {
		c := meca500.DefaultConfig(period)
		c.Address = "192.168.0.100"
		if err := c.Validate(); err != nil {
			t.Errorf("defaults at %v: %v", period, err)
		}
	}
	c := meca500.DefaultConfig(10 * time.Millisecond)
	c.Address = ""
	c.SpeedFraction = 1.5
	c.VelTimeout = 5 * time.Millisecond
	c.Watchdog = 15 * time.Millisecond
	c.MonitoringInterval = 20 * time.Millisecond
	c.StartupTimeout = time.Millisecond
	err := c.Validate()
	if !errors.Is(err, meca500.ErrConfig) {
		t.Fatalf("Validate = %v, want ErrConfig", err)
	}
	var fields []string
	for _, fe := range plant.FieldErrors(err) {
		fields = append(fields, fe.Field)
	}
	if got := strings.Join(fields, " "); got != "address speed_fraction vel_timeout watchdog monitoring_interval startup_timeout" {
		t.Errorf("fields %q", got)
	}
	if want := "meca500: invalid configuration: vel_timeout = 5ms: want longer than the link's period 10ms"; !strings.Contains(err.Error(), want) {
		t.Errorf("message %q, want …%s…", err, want)
	}
}

// The defaults follow the link's period: mecademicpy's watchdog rule and a
// sample for every tick.
func ExampleDefaultConfig() {
	c := meca500.DefaultConfig(time.Millisecond)
	fmt.Println(c.Watchdog, c.MonitoringInterval, c.VelTimeout)
	c = meca500.DefaultConfig(100 * time.Millisecond)
	fmt.Println(c.Watchdog, c.MonitoringInterval, c.VelTimeout)
	// Output:
	// 250ms 1ms 50ms
	// 400ms 100ms 50ms
}
