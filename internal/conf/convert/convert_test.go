package convert

import (
	"strings"
	"testing"
	"time"
)

func TestConverters(t *testing.T) {
	type conv = func([]string, string) (string, error)
	for _, c := range []struct {
		name string
		fn   conv
		vals []string
		cur  string
		want string
		err  string // an error containing it is wanted
	}{
		{"host and port", HostPort, []string{"10.0.0.1", "6651"}, ":6650", "10.0.0.1:6651", ""},
		{"0.0.0.0 binds all", HostPort, []string{"0.0.0.0", ""}, "127.0.0.1:6650", ":6650", ""},
		{"bad port", HostPort, []string{"", "70000"}, ":6650", "", "want 0..65535"},
		{"seconds", Seconds, []string{"90"}, "", "90s", ""},
		{"millis 0", Millis, []string{"0"}, "", "", "positive number of milliseconds"},
		{"millis or zero", MillisOrZero, []string{"0"}, "", "0ms", ""},
		{"zk: url", PulsarMetadataURL, []string{"zk:h1:2181/c", ""}, "", "zk://h1:2181/c", ""},
		{"zookeeperServers", PulsarMetadataURL, []string{"", "h1:2181,h2:2181"}, "", "zk://h1:2181,h2:2181", ""},
		{"etcd refused", PulsarMetadataURL, []string{"etcd:h1:2379", ""}, "", "", "supports ZooKeeper"},
		{"bk uri", BookkeeperMetadataURL, []string{"zk+hierarchical://h1:2181;h2:2181/pulsar/ledgers", "", ""}, "", "zk://h1:2181,h2:2181/pulsar", ""},
		{"bk root not ledgers", BookkeeperMetadataURL, []string{"", "h1:2181", "/bk"}, "", "", "<chroot>/ledgers"},
		{"one journal", FirstDir, []string{"a,b", ""}, "", "", "one journal directory"},
		{"not", Not, []string{"true"}, "", "false", ""},
		{"advertised default port", BookieAdvertised, []string{"b1", ""}, "x", "b1:3181", ""},
		{"advertised unset", BookieAdvertised, []string{"", "3182"}, "cur:1", "cur:1", ""},
		{"off at 0", OrOff(time.Second), []string{"0"}, "", "-1ns", ""},
		{"on at 3", OrOff(time.Second), []string{"3"}, "", "3s", ""},
		{"at least one", AtLeastOne(time.Minute), []string{"0"}, "", "", "must be at least 1"},
		{"positive refuses 0", Positive, []string{"0"}, "", "", "must be positive"},
		{"non-negative refuses -1", NonNegative, []string{"-1"}, "", "", "must not be negative"},
		{"negative is zero", NegativeIsZero, []string{"-5"}, "", "0", ""},
		{"split topics 0", SplitTopics, []string{"0"}, "", "-1", ""},
		{"zk timeout wins", SessionTimeout, []string{"30000", "5000"}, "6s", "5s", ""},
		{"zk -1 defers", SessionTimeout, []string{"30000", "-1"}, "6s", "30000ms", ""},
		{"message size too big", MessageSize, []string{"2147483647"}, "", "", "out of range"},
	} {
		got, err := c.fn(c.vals, c.cur)
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: %q, %v; want an error with %q", c.name, got, err, c.err)
			}
		case err != nil || got != c.want:
			t.Errorf("%s: %q, %v; want %q", c.name, got, err, c.want)
		}
	}
}
