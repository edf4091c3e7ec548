// Package convert holds the converters of Pulsar's configuration keys
// to Magnetar's flag values (conf.Key.Convert): they give the special
// values of Pulsar's keys (0, negative, empty) the meaning Pulsar gives
// them, instead of a default. Where Pulsar gives a value no meaning (it
// refuses to start, or the setting would admit nothing), the value is an
// error naming the key. The table of every key and its special values is
// docs/config-values.md (generated from cmd/magnetar's
// config_values_test.go, which checks each row).
//
// Each converter takes the values of a key's names (vals, in the key's
// order) and the flag's current value, and returns the flag value.
package convert

import (
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"time"
)

// HostPort builds an address from an optional host key and port key
// (vals[0], vals[1]) over the flag's current host:port.
func HostPort(vals []string, cur string) (string, error) {
	host, port, err := net.SplitHostPort(cur)
	if err != nil {
		return "", err
	}
	if vals[0] != "" {
		host = vals[0]
	}
	if vals[1] != "" {
		n, err := strconv.Atoi(vals[1])
		if err != nil || n < 0 || n > 65535 {
			return "", fmt.Errorf("port %q: want 0..65535", vals[1])
		}
		port = vals[1]
	}
	if host == "0.0.0.0" {
		host = ""
	}
	return net.JoinHostPort(host, port), nil
}

// Seconds turns a whole number of seconds into a duration flag value.
func Seconds(vals []string, _ string) (string, error) {
	n, err := strconv.ParseInt(vals[0], 10, 64)
	if err != nil || n < 0 {
		return "", fmt.Errorf("%q: want a non-negative number of seconds", vals[0])
	}
	return strconv.FormatInt(n, 10) + "s", nil
}

// Millis turns milliseconds into a duration flag value.
func Millis(vals []string, _ string) (string, error) {
	n, err := strconv.ParseInt(vals[0], 10, 64)
	if err != nil || n <= 0 {
		return "", fmt.Errorf("%q: want a positive number of milliseconds", vals[0])
	}
	return strconv.FormatInt(n, 10) + "ms", nil
}

// MillisOrZero turns milliseconds (0 allowed) into a duration flag value.
func MillisOrZero(vals []string, _ string) (string, error) {
	n, err := strconv.ParseInt(vals[0], 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/int64(time.Millisecond) {
		return "", fmt.Errorf("%q: want a number of milliseconds >= 0", vals[0])
	}
	return strconv.FormatInt(n, 10) + "ms", nil
}

// PulsarMetadataURL maps metadataStoreUrl (zk:host:port/chroot, or
// zk://...) or zookeeperServers (host:port,host:port) to --metadata-url.
func PulsarMetadataURL(vals []string, _ string) (string, error) {
	if u := vals[0]; u != "" {
		switch {
		case strings.HasPrefix(u, "zk://"):
			return u, nil
		case strings.HasPrefix(u, "zk:"):
			return "zk://" + strings.TrimPrefix(u, "zk:"), nil
		}
		return "", fmt.Errorf("metadataStoreUrl %q: Magnetar supports ZooKeeper (zk:host:port[/chroot])", u)
	}
	return "zk://" + vals[1], nil
}

// BookkeeperMetadataURL maps metadataServiceUri
// (zk+hierarchical://host:port/chroot/ledgers) or zkServers with
// zkLedgersRootPath to --metadata-url: Magnetar keeps bookies under
// <chroot>/ledgers, so the ledgers root must end in /ledgers.
func BookkeeperMetadataURL(vals []string, _ string) (string, error) {
	hosts, root := vals[1], vals[2]
	if u := vals[0]; u != "" {
		scheme, rest, ok := strings.Cut(u, "://")
		if !ok || !strings.HasPrefix(scheme, "zk") {
			return "", fmt.Errorf("metadataServiceUri %q: want zk+hierarchical://host:port/ledgers", u)
		}
		hosts, root, _ = strings.Cut(rest, "/")
		root = "/" + root
		hosts = strings.ReplaceAll(hosts, ";", ",")
	}
	if root == "" || root == "/" {
		root = "/ledgers"
	}
	chroot, ok := strings.CutSuffix(root, "/ledgers")
	if !ok {
		return "", fmt.Errorf("ledgers root %q: Magnetar keeps bookies under <chroot>/ledgers", root)
	}
	if hosts == "" {
		return "", fmt.Errorf("no ZooKeeper servers given")
	}
	return "zk://" + hosts + chroot, nil
}

// FirstDir takes a one-element directory list (Magnetar has one journal).
func FirstDir(vals []string, _ string) (string, error) {
	v := vals[0]
	if v == "" {
		v = vals[1]
	}
	if strings.Contains(v, ",") {
		return "", fmt.Errorf("%q: Magnetar takes one journal directory", v)
	}
	return v, nil
}

// Not inverts a boolean: the key says the opposite of the flag.
func Not(vals []string, _ string) (string, error) {
	b, err := strconv.ParseBool(vals[0])
	if err != nil {
		return "", err
	}
	return strconv.FormatBool(!b), nil
}

// BookieAdvertised is advertisedAddress with the bookie port.
func BookieAdvertised(vals []string, cur string) (string, error) {
	if vals[0] == "" {
		return cur, nil
	}
	port := vals[1]
	if port == "" {
		port = "3181"
	}
	return net.JoinHostPort(vals[0], port), nil
}

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

// OrOff: whole units; 0 or negative turns the thing off (a negative
// duration flag), as Pulsar's keepAliveIntervalSeconds=0 stops pings and
// idle closes.
func OrOff(unit time.Duration) func([]string, string) (string, error) {
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

// AtLeastOne: whole units, at least one. Pulsar refuses to start with 0
// for these (minValue = 1, or a scheduler period of 0).
func AtLeastOne(unit time.Duration) func([]string, string) (string, error) {
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

// AnyMinutes: whole minutes, zero and negative included (their meaning is
// applied where the setting is used: storageFlags.mlConfig).
func AnyMinutes(vals []string, _ string) (string, error) {
	n, err := whole(vals[0])
	if err != nil {
		return "", err
	}
	return times(n, time.Minute)
}

// Positive: a whole number above 0. For these keys 0 is no "unlimited" in
// Pulsar: a message size, a read batch, a connection or lookup limit of 0
// admits nothing, which is refused rather than replaced by a default.
func Positive(vals []string, _ string) (string, error) {
	n, err := whole(vals[0])
	if err != nil {
		return "", err
	}
	if n <= 0 {
		return "", fmt.Errorf("%d: must be positive (0 would admit nothing)", n)
	}
	return strconv.FormatInt(n, 10), nil
}

// NonNegative: a whole number; a negative value has no meaning that
// Pulsar documents, so it is refused.
func NonNegative(vals []string, _ string) (string, error) {
	n, err := whole(vals[0])
	if err != nil {
		return "", err
	}
	if n < 0 {
		return "", fmt.Errorf("%d: must not be negative", n)
	}
	return strconv.FormatInt(n, 10), nil
}

// NegativeIsZero: a whole number where Pulsar tests "> 0", so that a
// negative value means what 0 means (rate limits: no limit; expiry: never;
// flushEntrylogBytes: no pacing; offload deletion lag: at once).
func NegativeIsZero(vals []string, _ string) (string, error) {
	n, err := whole(vals[0])
	if err != nil {
		return "", err
	}
	return strconv.FormatInt(max(n, 0), 10), nil
}

// NegativeIsOff: a whole number where Pulsar tests ">= 0", so that any
// negative value is its -1, "off" (the offload thresholds).
func NegativeIsOff(vals []string, _ string) (string, error) {
	n, err := whole(vals[0])
	if err != nil {
		return "", err
	}
	return strconv.FormatInt(max(n, -1), 10), nil
}

// SessionTimeout maps metadataStoreSessionTimeoutMillis and the
// deprecated zooKeeperSessionTimeoutMillis (vals in that order) as Pulsar
// does: the ZooKeeper key wins when it is positive; its default -1 (and 0)
// defers to metadataStoreSessionTimeoutMillis, which must be positive.
func SessionTimeout(vals []string, cur string) (string, error) {
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
	return Millis(vals[:1], cur)
}

// Bundle split thresholds. Pulsar's splitter tests "more topics than",
// "a higher rate than" without a guard, so 0 splits every bundle of two
// or more topics that has any traffic; only the sessions test is guarded
// (> 0), so 0 or negative sessions leave sessions out.

// SplitTopics: 0 or negative splits every bundle of two or more topics.
func SplitTopics(vals []string, _ string) (string, error) {
	n, err := whole(vals[0])
	if err != nil {
		return "", err
	}
	if n <= 0 {
		return "-1", nil
	}
	return strconv.FormatInt(n, 10), nil
}

// SplitSessions: 0 or negative leaves producers+consumers out.
func SplitSessions(vals []string, _ string) (string, error) {
	n, err := whole(vals[0])
	if err != nil {
		return "", err
	}
	if n <= 0 || n > math.MaxInt32 {
		return strconv.Itoa(math.MaxInt32), nil
	}
	return strconv.FormatInt(n, 10), nil
}

// SplitRate: a rate threshold scaled by mult (1 msg/s, 1<<20 for
// megabytes); 0 means "any traffic", negative "always".
func SplitRate(mult float64) func([]string, string) (string, error) {
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

// Whole64 is any whole number (its meaning is applied where the setting
// is used).
func Whole64(vals []string, _ string) (string, error) {
	n, err := whole(vals[0])
	return strconv.FormatInt(n, 10), err
}

// FirstSetThen converts the first key with a value (firstSet) with conv.
func FirstSetThen(conv func([]string, string) (string, error)) func([]string, string) (string, error) {
	return func(vals []string, cur string) (string, error) {
		for _, v := range vals {
			if v != "" {
				return conv([]string{v}, cur)
			}
		}
		return cur, nil
	}
}

// MessageSize: maxMessageSize, from 1 to Pulsar's maximum (2^31-1 less
// the 10 KiB frame padding).
func MessageSize(vals []string, cur string) (string, error) {
	s, err := Positive(vals, cur)
	if err != nil {
		return "", err
	}
	if n, _ := strconv.ParseInt(s, 10, 64); n > math.MaxInt32-10*1024 {
		return "", fmt.Errorf("%d is out of range (at most %d)", n, math.MaxInt32-10*1024)
	}
	return s, nil
}
