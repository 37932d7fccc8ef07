package dynamixel

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Servo IDs and baud rates as a person writes them on a command line.

// ParseIDs reads servo IDs written as a range "lo-hi" or a comma-separated
// list "a,b,c", each in 0..252.
func ParseIDs(s string) ([]byte, error) {
	bad := fmt.Errorf("%w: IDs %q: want lo-hi or a comma-separated list of 0..%d", ErrRange, s, MaxID)
	if lo, hi, ok := strings.Cut(s, "-"); ok {
		l, err1 := strconv.Atoi(strings.TrimSpace(lo))
		h, err2 := strconv.Atoi(strings.TrimSpace(hi))
		if err1 != nil || err2 != nil || l < 0 || h > int(MaxID) || l > h {
			return nil, bad
		}
		ids := make([]byte, 0, h-l+1)
		for i := l; i <= h; i++ {
			ids = append(ids, byte(i))
		}
		return ids, nil
	}
	var ids []byte
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 0 || v > int(MaxID) {
			return nil, bad
		}
		ids = append(ids, byte(v))
	}
	return ids, nil
}

// ParseBauds reads baud rates written as a comma-separated list, or "all":
// every rate an X-series servo can be set to, the usual ones first.
func ParseBauds(s string) ([]int, error) {
	if s == "all" {
		return []int{1000000, 57600, 115200, 2000000, 3000000, 4000000, 4500000, 9600}, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("%w: baud %q: want a number or \"all\"", ErrBaud, f)
		}
		if _, err := BaudCode(v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// ModelName is a model number's name, for people.
func ModelName(model uint16) string {
	if model == ModelXM430W210 {
		return "XM430-W210"
	}
	return "unknown model"
}

// Found is a servo that answered a scan's ping.
type Found struct {
	ID       byte
	Model    uint16
	Firmware byte
	// Err is the servo's hardware alert, or an error other than silence
	// (a corrupt reply): a servo is there, not well.
	Err error
}

// Line is f as `bridge scan` lists it, found at baud: the model, the
// firmware and an alert, or what was wrong with the reply.
func (f Found) Line(baud int) string {
	if f.Err != nil && !errors.Is(f.Err, ErrAlert) {
		return fmt.Sprintf("ID %3d at %d baud: %v", f.ID, baud, f.Err)
	}
	s := fmt.Sprintf("ID %3d  baud %7d  model %d (%s)  firmware %d", f.ID, baud, f.Model, ModelName(f.Model), f.Firmware)
	if f.Err != nil {
		s += fmt.Sprintf("  ALERT: %v", f.Err)
	}
	return s
}

// Scan pings each of ids on bus, calling found for every servo that answers
// (silence is skipped) and progress after each ID with how many were done.
// It stops early when ctx is done.
func Scan(ctx context.Context, bus *Bus, ids []byte, found func(Found), progress func(done int)) error {
	for i, id := range ids {
		if err := ctx.Err(); err != nil {
			return err
		}
		model, fw, err := bus.Ping(id)
		if !errors.Is(err, ErrTimeout) {
			found(Found{ID: id, Model: model, Firmware: fw, Err: err})
		}
		if progress != nil {
			progress(i + 1)
		}
	}
	return nil
}

// Present reports whether a scan's reply says a servo is there and
// answering: a clean reply, or one with the servo's hardware alert. A
// corrupt or refused reply is a servo that answered badly.
func (f Found) Present() bool { return f.Err == nil || errors.Is(f.Err, ErrAlert) }

// FindBaud scans ids at each of bauds in turn, on the bus open makes for
// that baud (closed after), until some servo is present (Found.Present) at
// one of them. It returns that baud and the present IDs, or 0 and none.
// tried, if not nil, sees each baud's replies, those that answered badly
// included, once its scan is done. An open that fails ends the search with
// its error.
func FindBaud(ctx context.Context, open func(baud int) (*Bus, func(), error), bauds []int, ids []byte, tried func(baud int, replies []Found)) (int, []byte, error) {
	for _, baud := range bauds {
		bus, closeBus, err := open(baud)
		if err != nil {
			return 0, nil, err
		}
		var replies []Found
		err = Scan(ctx, bus, ids, func(f Found) { replies = append(replies, f) }, nil)
		closeBus()
		if tried != nil {
			tried(baud, replies)
		}
		if err != nil {
			return 0, nil, err
		}
		var present []byte
		for _, f := range replies {
			if f.Present() {
				present = append(present, f.ID)
			}
		}
		if len(present) > 0 {
			return baud, present, nil
		}
	}
	return 0, nil, nil
}
