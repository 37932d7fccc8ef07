package latency

import "math/bits"

// The log-linear scale of every histogram of durations in this module (this
// package's Histogram, the loop's lead window, the partner's send timing,
// the lateness window of the metrics): values below 2^sub each have their
// own bucket, and each power of two [2^e, 2^(e+1)) above is split into 2^sub
// equal buckets, so a bucket is at most 1/2^sub of its lower bound wide. A
// histogram picks sub for its precision and its own top, above which it
// counts values together (BucketsBelow tells how many buckets lie below a
// top).

// Bucket returns the bucket of v on the scale with 2^sub buckets per power
// of two; v < 0 counts as 0. It has no top: clamp the result to the
// histogram's last bucket.
func Bucket(v int64, sub int) int {
	if v < 1<<sub {
		return int(max(v, 0))
	}
	e := bits.Len64(uint64(v)) - 1 // 2^e ≤ v < 2^(e+1), e ≥ sub
	return (e-sub+1)<<sub + int(uint64(v)>>(e-sub)) - 1<<sub
}

// BucketBounds returns the lowest value of bucket i of the scale with 2^sub
// buckets per power of two, and its width: the bucket holds [lo, lo+width).
func BucketBounds(i, sub int) (lo, width int64) {
	if i < 1<<sub {
		return int64(i), 1
	}
	e := i>>sub - 1 + sub
	shift := uint(e - sub)
	return int64(1<<sub+i&(1<<sub-1)) << shift, 1 << shift
}

// BucketsBelow is how many buckets of the scale with 2^sub buckets per
// power of two hold the values below 2^top (top ≥ sub).
func BucketsBelow(top, sub int) int { return (top - sub + 1) << sub }
