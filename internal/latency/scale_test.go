package latency

import (
	"math"
	"testing"
)

// The scale's buckets tile the non-negative integers: each value lies in
// its bucket's bounds, each bucket starts where the one before ends, each
// is at most 1/2^sub of its lower bound wide above the exact ones, and
// BucketsBelow(top) is the bucket of 2^top.
func TestScaleTiles(t *testing.T) {
	for _, sub := range []int{3, 5, 7} {
		end := int64(0)
		for i := range BucketsBelow(20, sub) {
			lo, width := BucketBounds(i, sub)
			if lo != end {
				t.Fatalf("sub %d: bucket %d starts at %d, the one before ends at %d", sub, i, lo, end)
			}
			if lo >= 1<<sub && width > lo>>sub || width < 1 {
				t.Fatalf("sub %d: bucket %d [%d, +%d) is wider than 1/%d of its start", sub, i, lo, width, 1<<sub)
			}
			for _, v := range []int64{lo, lo + width/2, lo + width - 1} {
				if got := Bucket(v, sub); got != i {
					t.Fatalf("sub %d: Bucket(%d) = %d, want %d (its bounds [%d, +%d))", sub, v, got, i, lo, width)
				}
			}
			end = lo + width
		}
		for top := sub; top < 62; top++ {
			if got, want := Bucket(1<<top, sub), BucketsBelow(top, sub); got != want {
				t.Errorf("sub %d: Bucket(2^%d) = %d, BucketsBelow = %d", sub, top, got, want)
			}
		}
		if got := Bucket(-5, sub); got != 0 {
			t.Errorf("sub %d: Bucket(-5) = %d, want 0", sub, got)
		}
		if i := Bucket(math.MaxInt64, sub); i != BucketsBelow(63, sub)-1 {
			t.Errorf("sub %d: Bucket(MaxInt64) = %d, want the last below 2^63, %d", sub, i, BucketsBelow(63, sub)-1)
		}
	}
}

// The histogram's own layout is the scale's with subBits, its top bucket
// holding everything from 2^topExp·(2−1/128) on.
func TestHistogramIsOnTheScale(t *testing.T) {
	if numBuckets != BucketsBelow(topExp+1, subBits) {
		t.Errorf("numBuckets %d, the scale has %d below 2^%d", numBuckets, BucketsBelow(topExp+1, subBits), topExp+1)
	}
	if bucketOf(MaxTrackable) != numBuckets-1 || bucketOf(math.MaxInt64) != numBuckets-1 {
		t.Errorf("bucketOf(MaxTrackable) = %d, bucketOf(MaxInt64) = %d, want the last, %d", bucketOf(MaxTrackable), bucketOf(math.MaxInt64), numBuckets-1)
	}
}
