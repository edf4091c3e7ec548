package admin

import (
	"encoding/json"
	"strings"
	"testing"
)

func schemaBody(def string) string {
	b, _ := json.Marshal(map[string]any{"type": "AVRO", "schema": def, "properties": map[string]string{}})
	return string(b)
}

// TestHTTPSchemaRegistry: upload, compatibility test, version lookup,
// all versions, refusals (409/422), deletion, and the namespace and
// topic strategy endpoints.
func TestHTTPSchemaRegistry(t *testing.T) {
	tb := startBroker(t, nil)
	const (
		v1 = `{"type":"record","name":"U","fields":[{"name":"a","type":"string"}]}`
		v2 = `{"type":"record","name":"U","fields":[{"name":"a","type":"string"},{"name":"b","type":"int","default":1}]}`
		v3 = `{"type":"record","name":"U","fields":[{"name":"a","type":"string"},{"name":"c","type":"int"}]}`
	)
	base := "/admin/v2/schemas/public/default/reg/"
	expect := func(method, path, body string, code int, contains string) string {
		t.Helper()
		c, out := httpDo(t, tb, method, path, body)
		if c != code || !strings.Contains(out, contains) {
			t.Fatalf("%s %s: %d %s, want %d containing %q", method, path, c, out, code, contains)
		}
		return out
	}
	expect("POST", base+"schema", schemaBody(v1), 200, `"version":0`)
	expect("POST", base+"schema", schemaBody(v2), 200, `"version":1`)
	expect("POST", base+"schema", schemaBody(v1), 200, `"version":0`) // existing
	expect("POST", base+"compatibility", schemaBody(v3), 200, `"compatibility":false`)
	expect("POST", base+"compatibility", schemaBody(v2), 200, `"compatibility":true`)
	expect("POST", base+"schema", schemaBody(v3), 409, "reason")
	expect("POST", base+"schema", schemaBody(`{"type":"nope"}`), 422, "reason")
	expect("POST", base+"version", schemaBody(v2), 200, `"version":1`)
	expect("POST", base+"version", schemaBody(v3), 200, `"version":-1`) // Pulsar's NO_SCHEMA_VERSION
	expect("GET", base+"schemas", "", 200, `"version":1`)
	expect("GET", base+"schema/1", "", 200, `"type":"AVRO"`)

	// Topic override and namespace strategy.
	tp := "/admin/v2/persistent/public/default/reg/schemaCompatibilityStrategy"
	expect("GET", tp, "", 200, "null")
	expect("GET", tp+"?applied=true", "", 200, `"FULL"`)
	expect("PUT", tp, `"SIDEWAYS"`, 412, "reason")
	expect("PUT", tp, `"FORWARD"`, 204, "")
	expect("GET", tp, "", 200, `"FORWARD"`)
	expect("POST", base+"schema", schemaBody(v3), 200, `"version":2`)
	expect("DELETE", tp, "", 204, "")
	ns := "/admin/v2/namespaces/public/default/"
	expect("PUT", ns+"schemaCompatibilityStrategy", `"ALWAYS_INCOMPATIBLE"`, 204, "")
	expect("GET", ns+"schemaCompatibilityStrategy", "", 200, "ALWAYS_INCOMPATIBLE")
	expect("GET", tp+"?applied=true", "", 200, "ALWAYS_INCOMPATIBLE")
	expect("POST", ns+"isAllowAutoUpdateSchema", "false", 204, "")
	expect("GET", ns+"isAllowAutoUpdateSchema", "", 200, "false")
	expect("POST", ns+"schemaValidationEnforced", "maybe", 412, "reason")
	expect("PUT", ns+"compactionThreshold", "-1", 412, "reason")
	expect("PUT", ns+"compactionThreshold", "9223372036854775807", 204, "")
	expect("GET", ns+"compactionThreshold", "", 200, "9223372036854775807")

	expect("DELETE", base+"schema", "", 200, `"version":3`)
	expect("GET", base+"schema", "", 404, "reason")
	expect("GET", base+"schemas", "", 200, `"getSchemaResponses":[]`)
}

// TestSchemaRoutesWithoutRegistry: on a broker without a schema registry
// every schema route answers 503 (and nothing panics on the nil role).
func TestSchemaRoutesWithoutRegistry(t *testing.T) {
	tb := startBrokerOpts(t, brokerOpts{noSchemas: true})
	base := "/admin/v2/schemas/public/default/noreg/"
	strat := "/admin/v2/persistent/public/default/noreg/schemaCompatibilityStrategy"
	for _, c := range []struct{ method, path, body string }{
		{"GET", base + "schema", ""}, {"GET", base + "schema/0", ""}, {"GET", base + "schemas", ""},
		{"POST", base + "schema", schemaBody(`{"type":"string"}`)}, {"POST", base + "compatibility", schemaBody(`{"type":"string"}`)},
		{"POST", base + "version", schemaBody(`{"type":"string"}`)}, {"DELETE", base + "schema", ""},
		{"GET", strat, ""}, {"PUT", strat, `"FULL"`}, {"POST", strat, `"FULL"`}, {"DELETE", strat, ""},
	} {
		if code, out := httpDo(t, tb, c.method, c.path, c.body); code != 503 || !strings.Contains(out, "schema registry") {
			t.Fatalf("%s %s: %d %s, want 503", c.method, c.path, code, out)
		}
	}
}
