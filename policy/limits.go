package policy

import (
	"math"
	"time"
)

// Pulsar declares message TTL, retention minutes, backlog quota limitTime
// and the per-topic producer/consumer limits as Java ints: values above
// math.MaxInt32 are refused (the admin API answers 400), so a policy never
// holds a number whose conversion to milliseconds, a time.Duration or
// bytes could wrap. The conversions below also saturate, for policies
// stored before the checks existed.

// MaxInt32Value is the largest TTL, minute or second count a policy holds.
const MaxInt32Value = math.MaxInt32

// saturatingMul returns n*unit, or math.MaxInt64 when it would overflow
// (n >= 0, unit > 0).
func saturatingMul(n, unit int64) int64 {
	if n > math.MaxInt64/unit {
		return math.MaxInt64
	}
	return n * unit
}

// Seconds converts a count of seconds (>= 0) to a Duration, saturating.
func Seconds(n int64) time.Duration {
	return time.Duration(saturatingMul(n, int64(time.Second)))
}

// ExpiryCutoff returns the publish time (unix ms) before which messages
// are older than secs at nowMs, and false when no message can be that old
// (secs reaches back before the epoch): the caller then expires nothing.
// It never wraps into the future.
func ExpiryCutoff(nowMs, secs int64) (int64, bool) {
	if secs < 0 {
		return 0, false
	}
	ms := saturatingMul(secs, 1000)
	if ms > nowMs {
		return 0, false
	}
	return nowMs - ms, true
}

// Time is the retention time as a Duration (-1: unlimited), saturating.
func (r RetentionPolicies) Time() time.Duration {
	if r.RetentionTimeInMinutes < 0 {
		return -1
	}
	return time.Duration(saturatingMul(int64(r.RetentionTimeInMinutes), int64(time.Minute)))
}

// Size is the retention size in bytes (-1: unlimited), saturating.
func (r RetentionPolicies) Size() int64 {
	if r.RetentionSizeInMB < 0 {
		return -1
	}
	return saturatingMul(r.RetentionSizeInMB, 1<<20)
}

// Age is the message_age limit as a Duration, saturating.
func (q BacklogQuota) Age() time.Duration { return Seconds(q.LimitTime) }
