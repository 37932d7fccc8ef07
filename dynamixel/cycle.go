package dynamixel

import "time"

// DefaultReturnDelay is an XM430's Return Delay Time as shipped: 250 × 2 µs.
const DefaultReturnDelay = 500 * time.Microsecond

// CycleBytes is how many bytes one control cycle of n servos puts on the
// bus (docs/dynamixel.md §10): a Sync Read of the present positions, 14+n
// bytes, with n replies of 15, or a Fast Sync Read's one reply of 8+8n; and
// a Sync Write of the goal positions, 14+5n. Four servos: 112 bytes, or 92
// with a Fast Sync Read, as captured.
func CycleBytes(n int, fast bool) int {
	bytes := 14 + n + 14 + 5*n
	if fast {
		return bytes + 8 + 8*n
	}
	return bytes + 15*n
}

// WireTime is how long bytes take on the bus at baud: 10 bits a byte (a
// start bit, 8 data bits and a stop bit).
func WireTime(bytes, baud int) time.Duration {
	return time.Duration(bytes) * 10 * time.Second / time.Duration(baud)
}

// CycleTime is the time of one control cycle of n servos: its bytes' wire
// time, one latency timer of the USB adapter for the read's reply, and the
// servos' Return Delay Time, once for a Fast Sync Read (its replies chain)
// and once per servo otherwise.
func CycleTime(n, baud int, fast bool, latency, returnDelay time.Duration) time.Duration {
	delays := returnDelay
	if !fast {
		delays = time.Duration(n) * returnDelay
	}
	return WireTime(CycleBytes(n, fast), baud) + latency + delays
}
