package conf

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestParse(t *testing.T) {
	f, err := Parse(strings.NewReader("# comment\n! also\n\n a = 1 \nb: two words\nlist=x,\\\n  y\nempty=\na=3\n"), "t.conf")
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"a": "3", "b": "two words", "list": "x,y", "empty": ""} {
		if got, ok := f.Get(k); !ok || got != want {
			t.Errorf("%s = %q %v, want %q", k, got, ok, want)
		}
	}
	if got := strings.Join(f.Keys(), " "); got != "a b list empty" {
		t.Errorf("keys %q", got)
	}
	if f.lines["a"] != 9 || f.lines["list"] != 6 {
		t.Errorf("lines %v", f.lines)
	}
	for _, bad := range []string{"novalue\n", "=x\n", "k=v\\\n"} {
		if _, err := Parse(strings.NewReader(bad), "bad.conf"); err == nil || !strings.Contains(err.Error(), "bad.conf:1") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// TestApplyEmptyValueIsUnset: an empty value leaves the default, as
// Pulsar reads empty settings.
func TestApplyEmptyValueIsUnset(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	n := fs.Int("n", 7, "")
	s := &Schema{Keys: []Key{{Names: []string{"num"}, Flag: "n"}}}
	f, _ := Parse(strings.NewReader("num=\n"), "t.conf")
	if _, err := s.Apply(fs, f, nil); err != nil || *n != 7 {
		t.Fatalf("n=%d %v", *n, err)
	}
	if FlagEnv("max-message-size") != "MAGNETAR_MAX_MESSAGE_SIZE" {
		t.Fatal(FlagEnv("max-message-size"))
	}
}

// TestApplyEmptyMeaning: a key whose empty value Pulsar gives a meaning
// (Key.Empty) sets the flag to that meaning, from the file or from an
// empty PULSAR_PREFIX_ variable; a later non-empty value wins over it,
// and the other names of the key stay "absent when empty".
func TestApplyEmptyMeaning(t *testing.T) {
	schema := func() (*pflag.FlagSet, *string, *Schema) {
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		l := fs.String("listen", ":6650", "")
		return fs, l, &Schema{Keys: []Key{{Names: []string{"bindAddress", "brokerServicePort"}, Flag: "listen",
			Convert: func(v []string, cur string) (string, error) { return v[0] + ":" + v[1], nil },
			Empty:   map[string]string{"brokerServicePort": "-"}}}}
	}
	for _, c := range []struct {
		file string
		env  []string
		want string
	}{
		{"brokerServicePort=\n", nil, "-"},
		{"bindAddress=h\nbrokerServicePort=\n", nil, "-"},
		{"brokerServicePort=6650\n", []string{"PULSAR_PREFIX_brokerServicePort="}, "-"},
		{"brokerServicePort=\n", []string{"PULSAR_PREFIX_brokerServicePort=7000"}, ":7000"},
		{"bindAddress=\nbrokerServicePort=7000\n", nil, ":7000"},
		{"bindAddress=\n", nil, ":6650"},
	} {
		fs, l, s := schema()
		f, _ := Parse(strings.NewReader(c.file), "t.conf")
		res, err := s.Apply(fs, f, c.env)
		if err != nil || *l != c.want {
			t.Errorf("%q %v: listen=%q %v, want %q", c.file, c.env, *l, err, c.want)
		}
		if c.want == "-" && !strings.Contains(res.Sources[0].Origin, "brokerServicePort empty") {
			t.Errorf("%q: origin %q", c.file, res.Sources[0].Origin)
		}
	}
}
