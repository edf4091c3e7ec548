package main

// Converters that give the special values of Pulsar's keys (0, negative,
// empty) the meaning Pulsar gives them, instead of a default. Where
// Pulsar gives a value no meaning (it refuses to start, or the setting
// would admit nothing), the value is an error naming the key. The table
// of every key and its special values is docs/config-values.md
// (generated from config_values_test.go, which checks each row).

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// whole parses a whole number.
func whole(v string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q: want a whole number", v)
	}
	return n, nil
}

// times is n units as a duration flag value, refusing what overflows.
func times(n int64, unit time.Duration) (string, error) {
	if n > math.MaxInt64/int64(unit) || n < math.MinInt64/int64(unit) {
		return "", fmt.Errorf("%d is out of range", n)
	}
	return (time.Duration(n) * unit).String(), nil
}

// orOff: whole units; 0 or negative turns the thing off (a negative
// duration flag), as Pulsar's keepAliveIntervalSeconds=0 stops pings and
// idle closes.
func orOff(unit time.Duration) func([]string, string) (string, error) {
	return func(vals []string, _ string) (string, error) {
		n, err := whole(vals[0])
		if err != nil {
			return "", err
		}
		if n <= 0 {
			return "-1ns", nil
		}
		return times(n, unit)
	}
}

// atLeastOne: whole units, at least one. Pulsar refuses to start with 0
// for these (minValue = 1, or a scheduler period of 0).
func atLeastOne(unit time.Duration) func([]string, string) (string, error) {
	return func(vals []string, _ string) (string, error) {
		n, err := whole(vals[0])
		if err != nil {
			return "", err
		}
		if n < 1 {
			return "", fmt.Errorf("%d: must be at least 1 (Pulsar refuses to start with it too)", n)
		}
		return times(n, unit)
	}
}

// anyMinutes: whole minutes, zero and negative included (their meaning is
// applied where the setting is used: storageFlags.mlConfig).
func anyMinutes(vals []string, _ string) (string, error) {
	n, err := whole(vals[0])
	if err != nil {
		return "", err
	}
	return times(n, time.Minute)
}

// positive: a whole number above 0. For these keys 0 is no "unlimited" in
// Pulsar: a message size, a read batch, a connection or lookup limit of 0
// admits nothing, which is refused rather than replaced by a default.
func positive(vals []string, _ string) (string, error) {
	n, err := whole(vals[0])
	if err != nil {
		return "", err
	}
	if n <= 0 {
		return "", fmt.Errorf("%d: must be positive (0 would admit nothing)", n)
	}
	return strconv.FormatInt(n, 10), nil
}

// nonNegative: a whole number; a negative value has no meaning that
// Pulsar documents, so it is refused.
func nonNegative(vals []string, _ string) (string, error) {
	n, err := whole(vals[0])
	if err != nil {
		return "", err
	}
	if n < 0 {
		return "", fmt.Errorf("%d: must not be negative", n)
	}
	return strconv.FormatInt(n, 10), nil
}

// negativeIsZero: a whole number where Pulsar tests "> 0", so that a
// negative value means what 0 means (rate limits: no limit; expiry: never;
// flushEntrylogBytes: no pacing; offload deletion lag: at once).
func negativeIsZero(vals []string, _ string) (string, error) {
	n, err := whole(vals[0])
	if err != nil {
		return "", err
	}
	return strconv.FormatInt(max(n, 0), 10), nil
}

// negativeIsOff: a whole number where Pulsar tests ">= 0", so that any
// negative value is its -1, "off" (the offload thresholds).
func negativeIsOff(vals []string, _ string) (string, error) {
	n, err := whole(vals[0])
	if err != nil {
		return "", err
	}
	return strconv.FormatInt(max(n, -1), 10), nil
}

// sessionTimeout maps metadataStoreSessionTimeoutMillis and the
// deprecated zooKeeperSessionTimeoutMillis (vals in that order) as Pulsar
// does: the ZooKeeper key wins when it is positive; its default -1 (and 0)
// defers to metadataStoreSessionTimeoutMillis, which must be positive.
func sessionTimeout(vals []string, cur string) (string, error) {
	if vals[1] != "" {
		zk, err := whole(vals[1])
		if err != nil {
			return "", err
		}
		if zk > 0 {
			return times(zk, time.Millisecond)
		}
	}
	if vals[0] == "" {
		return cur, nil
	}
	return millis(vals[:1], cur)
}

// Bundle split thresholds. Pulsar's splitter tests "more topics than",
// "a higher rate than" without a guard, so 0 splits every bundle of two
// or more topics that has any traffic; only the sessions test is guarded
// (> 0), so 0 or negative sessions leave sessions out.

// splitTopics: 0 or negative splits every bundle of two or more topics.
func splitTopics(vals []string, _ string) (string, error) {
	n, err := whole(vals[0])
	if err != nil {
		return "", err
	}
	if n <= 0 {
		return "-1", nil
	}
	return strconv.FormatInt(n, 10), nil
}

// splitSessions: 0 or negative leaves producers+consumers out.
func splitSessions(vals []string, _ string) (string, error) {
	n, err := whole(vals[0])
	if err != nil {
		return "", err
	}
	if n <= 0 || n > math.MaxInt32 {
		return strconv.Itoa(math.MaxInt32), nil
	}
	return strconv.FormatInt(n, 10), nil
}

// splitRate: a rate threshold scaled by mult (1 msg/s, 1<<20 for
// megabytes); 0 means "any traffic", negative "always".
func splitRate(mult float64) func([]string, string) (string, error) {
	return func(vals []string, _ string) (string, error) {
		n, err := whole(vals[0])
		if err != nil {
			return "", err
		}
		switch {
		case n == 0:
			return strconv.FormatFloat(math.SmallestNonzeroFloat64, 'g', -1, 64), nil
		case n < 0:
			return "-1", nil
		}
		return strconv.FormatFloat(float64(n)*mult, 'f', -1, 64), nil
	}
}

// whole64 is any whole number (its meaning is applied where the setting
// is used).
func whole64(vals []string, _ string) (string, error) {
	n, err := whole(vals[0])
	return strconv.FormatInt(n, 10), err
}

// firstSetThen converts the first key with a value (firstSet) with conv.
func firstSetThen(conv func([]string, string) (string, error)) func([]string, string) (string, error) {
	return func(vals []string, cur string) (string, error) {
		for _, v := range vals {
			if v != "" {
				return conv([]string{v}, cur)
			}
		}
		return cur, nil
	}
}

// messageSize: maxMessageSize, from 1 to Pulsar's maximum (2^31-1 less
// the 10 KiB frame padding).
func messageSize(vals []string, cur string) (string, error) {
	s, err := positive(vals, cur)
	if err != nil {
		return "", err
	}
	if n, _ := strconv.ParseInt(s, 10, 64); n > math.MaxInt32-10*1024 {
		return "", fmt.Errorf("%d is out of range (at most %d)", n, math.MaxInt32-10*1024)
	}
	return s, nil
}
