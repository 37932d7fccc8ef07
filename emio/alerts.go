package emio

import (
	"context"
	"log/slog"
	"time"
)

// AlertReporter logs the servos' hardware alerts (overheating, overload) as
// they come: the loop only records them (Motors.Alert), since a log line has
// no place in a tick. It is a service the supervisor runs beside the link.
type AlertReporter struct {
	Motors *Motors
	Logger *slog.Logger
	// Every is how often alerts are looked for; 0 means 500 ms.
	Every time.Duration
}

// Serve reports alerts until ctx is done. It may be served again.
func (r *AlertReporter) Serve(ctx context.Context) error {
	every := r.Every
	if every <= 0 {
		every = 500 * time.Millisecond
	}
	log := r.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		a, n := r.Motors.Alert()
		if a == nil {
			continue
		}
		attrs := []any{"id", a.ID, "hardware_error", a.Hardware.String(), "temperature_c", a.TemperatureC,
			"temperature_limit_c", a.LimitC, "alerts", n}
		if a.Err != nil {
			attrs = append(attrs, "diagnosis_err", a.Err.Error())
		}
		log.Warn("servo hardware alert: the servo protects itself (torque off on overheating or overload); let it cool, then reboot it", attrs...)
	}
}
