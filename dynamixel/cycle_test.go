package dynamixel

import (
	"testing"
	"time"
)

// The cycle's bytes as captured for the Emio's four servos, and its time at
// 1 Mbaud with a 1 ms latency timer.
func TestCycle(t *testing.T) {
	for _, tc := range []struct {
		n     int
		fast  bool
		bytes int
		time  time.Duration
	}{
		{4, false, 112, 1120*time.Microsecond + time.Millisecond + 4*DefaultReturnDelay},
		{4, true, 92, 920*time.Microsecond + time.Millisecond + DefaultReturnDelay},
		{1, false, 49, 490*time.Microsecond + time.Millisecond + DefaultReturnDelay},
	} {
		if got := CycleBytes(tc.n, tc.fast); got != tc.bytes {
			t.Errorf("CycleBytes(%d, %v) = %d, want %d", tc.n, tc.fast, got, tc.bytes)
		}
		if got := CycleTime(tc.n, 1_000_000, tc.fast, time.Millisecond, DefaultReturnDelay); got != tc.time {
			t.Errorf("CycleTime(%d, 1 Mbaud, %v) = %v, want %v", tc.n, tc.fast, got, tc.time)
		}
	}
	if got := WireTime(112, 57600); got != 19444444*time.Nanosecond {
		t.Errorf("WireTime(112, 57600) = %v", got)
	}
}
