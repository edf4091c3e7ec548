package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/magnetar-mq/magnetar/clientcli"
)

// TestClientRoundTrip: magnetar client produce (arguments, a file, -n,
// key, properties, string type) then consume (earliest, JSON, hex, text)
// against a real standalone.
func TestClientRoundTrip(t *testing.T) {
	p := startStandalone(t, t.TempDir())
	const topic = "persistent://public/default/client-rt"
	file := filepath.Join(t.TempDir(), "blob")
	blob := []byte{0, 1, 2, 0xff, 'z'}
	if err := os.WriteFile(file, blob, 0o644); err != nil {
		t.Fatal(err)
	}
	// Create the subscription first so consume sees everything.
	if _, errOut, code := runMagnetar(t, "client", "consume", topic, "--url", p.service, "-s", "sub",
		"-p", "Earliest", "-n", "0", "--operation-timeout", "5s", "--output", "bogus"); code == 0 || !strings.Contains(errOut, "--output") {
		t.Fatalf("bad --output accepted: %d %s", code, errOut)
	}
	out, errOut, code := runMagnetar(t, "client", "produce", topic, "--url", p.service,
		"-m", "hello,world", "-n", "2", "-k", "k1", "-p", "a=1", "-p", "b=two")
	if code != 0 || strings.Count(out, "\n") != 4 || !strings.Contains(errOut, "4 messages produced") {
		t.Fatalf("produce: %d %q %q", code, out, errOut)
	}
	if _, errOut, code := runMagnetar(t, "client", "produce", topic, "--url", p.service, "-f", file, "--disable-batching"); code != 0 {
		t.Fatalf("produce file: %d %s", code, errOut)
	}
	if _, errOut, code := runMagnetar(t, "client", "produce", topic, "--url", p.service, "-m", "typed", "--type", "string", "-s", ""); code != 0 {
		t.Fatalf("produce string: %d %s", code, errOut)
	}
	if _, errOut, code := runMagnetar(t, "client", "produce", topic, "--url", p.service); code == 0 || !strings.Contains(errOut, "nothing to send") {
		t.Fatalf("produce without messages: %d %s", code, errOut)
	}

	out, errOut, code = runMagnetar(t, "client", "consume", topic, "--url", p.service, "-s", "sub",
		"-p", "Earliest", "-n", "6", "-o", "json")
	if code != 0 {
		t.Fatalf("consume: %d %s", code, errOut)
	}
	var got []clientcli.ConsumedMessage
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var m clientcli.ConsumedMessage
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		got = append(got, m)
	}
	want := []string{"hello", "world", "hello", "world", string(blob), "typed"}
	if len(got) != len(want) {
		t.Fatalf("consumed %d messages, want %d: %s", len(got), len(want), out)
	}
	for i, m := range got {
		if string(m.Payload) != want[i] {
			t.Errorf("message %d payload %q, want %q", i, m.Payload, want[i])
		}
		if i < 4 && (m.Key != "k1" || m.Properties["a"] != "1" || m.Properties["b"] != "two" || m.Text != want[i]) {
			t.Errorf("message %d: %+v", i, m)
		}
	}
	if got[4].Text != "" {
		t.Errorf("binary payload printed as text %q", got[4].Text)
	}
	// Everything was acknowledged: a second consumer of the subscription
	// gets the next message only.
	if _, errOut, code := runMagnetar(t, "client", "produce", topic, "--url", p.service, "-m", "last"); code != 0 {
		t.Fatalf("produce last: %d %s", code, errOut)
	}
	out, _, code = runMagnetar(t, "client", "consume", topic, "--url", p.service, "-s", "sub", "-o", "hex")
	if code != 0 || !strings.Contains(out, "6c 61 73 74") || !strings.Contains(out, "|last|") {
		t.Fatalf("hex consume: %d %q", code, out)
	}
	if _, _, code := runMagnetar(t, "client", "produce", topic, "--url", p.service, "-m", "text-out"); code != 0 {
		t.Fatal("produce")
	}
	out, _, code = runMagnetar(t, "client", "consume", topic, "--url", p.service, "-s", "sub")
	if code != 0 || !strings.Contains(out, "content:text-out") {
		t.Fatalf("text consume: %d %q", code, out)
	}
}
