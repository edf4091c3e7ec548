package admin

import (
	"net/http"
	"strings"
	"testing"
)

// TestClientVersionRefusal: Pulsar's parse of the User-Agent, case by
// case (PersistentTopicsBase.internalValidateClientVersionAsync).
func TestClientVersionRefusal(t *testing.T) {
	const none = "Client lib is not compatible to access partitioned metadata: version in user-agent is not present"
	old := func(ua string) string {
		return "Client lib is not compatible to access partitioned metadata: version " + ua + " is not supported"
	}
	for _, c := range []struct{ ua, want string }{
		{"", none},
		{"   ", none},
		{"Pulsar-CPP-v1.20", old("Pulsar-CPP-v1.20")},
		{"Pulsar-CPP-v0.30", old("Pulsar-CPP-v0.30")},
		{"Pulsar-CPP-v1.20.1-SNAPSHOT", old("Pulsar-CPP-v1.20.1-SNAPSHOT")},
		{"x Pulsar-CPP-v 1.19 ", old("x Pulsar-CPP-v 1.19 ")},
		// Pulsar compares the fields one by one: a 2.x with a minor
		// below 21 is refused too.
		{"Pulsar-CPP-v2.10", old("Pulsar-CPP-v2.10")},
		{"Pulsar-CPP-v1.21", ""},
		{"Pulsar-CPP-v3.21.0", ""},
		// Fewer than two fields, or a field that is not a number: no
		// check (Pulsar logs the parse failure and lets the call pass).
		{"Pulsar-CPP-v1", ""},
		{"Pulsar-CPP-v", ""},
		{"Pulsar-CPP-v-1.2", ""},
		{"Pulsar-CPP-vX.Y", ""},
		{"Pulsar-CPP-v1..20", ""},
		{"Pulsar-Java-v3.0.0", ""},
		{"Go-http-client/1.1", ""},
		{"pulsarctl (go)", ""},
	} {
		if got := clientVersionRefusal(c.ua); got != c.want {
			t.Errorf("User-Agent %q: %q, want %q", c.ua, got, c.want)
		}
	}
}

// TestClientLibraryVersionCheck: with clientLibraryVersionCheckEnabled
// off every client reads a partitioned topic's metadata; on (from the
// file or a dynamic update, which applies at once and whose removal
// brings the file's value back), GET .../partitions of a topic of more
// than one partition answers 405 with Pulsar's reason to a request
// without a User-Agent and to a C++ client older than 1.21, and the
// others (and any client on a topic of one partition) get the metadata.
func TestClientLibraryVersionCheck(t *testing.T) {
	t.Parallel()
	for _, fileOn := range []bool{false, true} {
		tb := startBrokerOpts(t, brokerOpts{versionCheck: fileOn})
		ns := newNamespace(t, tb)
		three := adminPath("persistent://"+ns+"/three") + "/partitions"
		one := adminPath("non-persistent://"+ns+"/one") + "/partitions"
		mustHTTP(t, tb, "PUT", three, "3", http.StatusNoContent)
		mustHTTP(t, tb, "PUT", one, "1", http.StatusNoContent)
		get := func(path, ua string) (int, string) {
			t.Helper()
			return httpDoAt(t, "http://"+tb.HTTPAddr(), http.Header{"User-Agent": {ua}}, "GET", path, "") // "": none is sent
		}
		clients := []string{"", "Pulsar-CPP-v1.20", "Pulsar-CPP-v1.21", "Pulsar-Java-v3.0.0", "Go-http-client/1.1"}
		allAdmitted := func(when string) {
			t.Helper()
			for _, ua := range clients {
				if code, body := get(three, ua); code != http.StatusOK || !strings.Contains(body, `"partitions":3`) {
					t.Fatalf("%s: User-Agent %q: %d %s", when, ua, code, body)
				}
			}
		}
		checked := func(when string) {
			t.Helper()
			for _, ua := range clients {
				code, body := get(three, ua)
				switch ua {
				case "":
					if code != http.StatusMethodNotAllowed || !strings.Contains(body, `"Client lib is not compatible to access partitioned metadata: version in user-agent is not present"`) {
						t.Fatalf("%s: no User-Agent: %d %s", when, code, body)
					}
				case "Pulsar-CPP-v1.20":
					if code != http.StatusMethodNotAllowed || !strings.Contains(body, `"Client lib is not compatible to access partitioned metadata: version Pulsar-CPP-v1.20 is not supported"`) {
						t.Fatalf("%s: %s: %d %s", when, ua, code, body)
					}
				default:
					if code != http.StatusOK || !strings.Contains(body, `"partitions":3`) {
						t.Fatalf("%s: User-Agent %q: %d %s", when, ua, code, body)
					}
				}
				// One partition: never checked.
				if code, body := get(one, ua); code != http.StatusOK || !strings.Contains(body, `"partitions":1`) {
					t.Fatalf("%s: one partition, User-Agent %q: %d %s", when, ua, code, body)
				}
			}
		}
		const key = "/admin/v2/brokers/configuration/clientLibraryVersionCheckEnabled"
		if fileOn {
			checked("file on")
			mustHTTP(t, tb, "POST", key+"/false", "", http.StatusOK)
			allAdmitted("updated to false")
			mustHTTP(t, tb, "DELETE", key, "", http.StatusNoContent)
			checked("override removed, file on")
			continue
		}
		allAdmitted("off")
		mustHTTP(t, tb, "POST", key+"/TRUE", "", http.StatusOK)
		checked("updated to TRUE")
		mustHTTP(t, tb, "DELETE", key, "", http.StatusNoContent)
		allAdmitted("override removed, file off")
	}
}
