package metrics

import (
	"fmt"
	"math"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
)

// ServoReading is what a link knows of one servo when it is scraped.
type ServoReading struct {
	ID int
	// TemperatureC is the servo's last temperature, °C; NaN before the
	// first read.
	TemperatureC float64
	// LimitC is its temperature limit, °C; NaN if unknown.
	LimitC float64
	// HardwareError is the Dynamixel Hardware Error Status (X series,
	// address 70) of its last status packet.
	HardwareError uint8
	// Alerts counts replies carrying the alert bit; MissedReads, reads it
	// did not answer. Both are cumulative.
	Alerts, MissedReads uint64
}

// hardwareErrors names the bits of the Dynamixel X-series Hardware Error
// Status (address 70) that the servos define; bits 1, 6 and 7 are unused.
var hardwareErrors = [...]struct {
	bit  uint8
	name string
}{
	{0, "input_voltage"},
	{2, "overheating"},
	{3, "encoder"},
	{4, "electrical_shock"},
	{5, "overload"},
}

// Servos registers the servo metrics of the link called name. read is
// called at each scrape, off the loop thread, and appends a reading per
// servo to dst (which it may reuse); the label servo is the decimal ID:
//
//   - bridge_servo_temperature_celsius and
//     bridge_servo_temperature_limit_celsius: absent while NaN (not read
//     yet, unknown), rather than NaN, as Prometheus exporters do for a
//     value they do not have: a rule such as "> 70" then has nothing to
//     compare, and a panel shows a gap;
//   - bridge_servo_hardware_error{error}: 0 or 1 for each bit name
//     (input_voltage, overheating, encoder, electrical_shock, overload);
//   - bridge_servo_alerts_total: replies carrying the alert bit;
//   - bridge_servo_missed_reads_total: reads the servo did not answer.
//
// Every servo read returns has its counters and error flags, at 0 until
// something happens. A servo ID read returns twice is reported once, with
// its first reading.
func (s *Set) Servos(name string, read func(dst []ServoReading) []ServoReading) error {
	if name == "" || !utf8.ValidString(name) {
		return fmt.Errorf("%w: link name %q (want non-empty UTF-8)", ErrInvalid, name)
	}
	if read == nil {
		return fmt.Errorf("%w: link %q: no servo reading", ErrInvalid, name)
	}
	labels := prometheus.Labels{"link": name}
	desc := func(n, help string, vars ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(namespace, "servo", n), help, append([]string{"servo"}, vars...), labels)
	}
	c := &servoCollector{
		read:   read,
		temp:   desc("temperature_celsius", "The servo's temperature at its last read; absent before one."),
		limit:  desc("temperature_limit_celsius", "The servo's temperature limit; absent while unknown."),
		hwErr:  desc("hardware_error", "The servo's Dynamixel Hardware Error Status bits at its last status packet: 1 set, 0 clear.", "error"),
		alerts: desc("alerts_total", "Replies of the servo carrying the alert bit (a hardware error)."),
		missed: desc("missed_reads_total", "Reads the servo did not answer."),
	}
	if err := s.reg.Register(c); err != nil {
		return fmt.Errorf("%w: servos of link %q: %w", ErrRegister, name, err)
	}
	return nil
}

type servoCollector struct {
	read                               func([]ServoReading) []ServoReading
	temp, limit, hwErr, alerts, missed *prometheus.Desc

	// mu guards buf, reused across scrapes, which may overlap.
	mu  sync.Mutex
	buf []ServoReading
}

// Describe implements prometheus.Collector.
func (c *servoCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.temp, c.limit, c.hwErr, c.alerts, c.missed} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *servoCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf = c.read(c.buf[:0])
	seen := make(map[int]bool, len(c.buf))
	for _, r := range c.buf {
		if seen[r.ID] {
			continue
		}
		seen[r.ID] = true
		id := strconv.Itoa(r.ID)
		if !math.IsNaN(r.TemperatureC) {
			ch <- constMetric(c.temp, r.TemperatureC, id)
		}
		if !math.IsNaN(r.LimitC) {
			ch <- constMetric(c.limit, r.LimitC, id)
		}
		for _, e := range hardwareErrors {
			ch <- constMetric(c.hwErr, float64(r.HardwareError>>e.bit&1), id, e.name)
		}
		ch <- counterMetric(c.alerts, float64(r.Alerts), id)
		ch <- counterMetric(c.missed, float64(r.MissedReads), id)
	}
}

func counterMetric(d *prometheus.Desc, v float64, lvs ...string) prometheus.Metric {
	m, err := prometheus.NewConstMetric(d, prometheus.CounterValue, v, lvs...)
	if err != nil {
		return prometheus.NewInvalidMetric(d, err)
	}
	return m
}
