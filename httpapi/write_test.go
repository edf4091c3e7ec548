package httpapi

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestWriteJSONHasNoTrailingNewline: a JSON string answer is the value
// alone. pulsaradmin reads string policies (the schema auto-update
// strategy, for one) as raw bytes with only the quotes removed, so
// "Full"+"\n" fails to parse there.
func TestWriteJSONHasNoTrailingNewline(t *testing.T) {
	for _, c := range []struct {
		v    any
		want string
	}{
		{"Full", `"Full"`},
		{map[string]int{"a": 1}, `{"a":1}`},
		{[]string{}, `[]`},
		{int64(-1), `-1`},
	} {
		rec := httptest.NewRecorder()
		WriteJSON(rec, http.StatusOK, c.v)
		if got := rec.Body.String(); got != c.want {
			t.Errorf("WriteJSON(%#v) = %q, want %q", c.v, got, c.want)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type %q", ct)
		}
	}
	rec := httptest.NewRecorder()
	WriteJSON(rec, http.StatusOK, func() {})
	if rec.Code != http.StatusInternalServerError {
		t.Errorf("an unencodable value answered %d, want 500", rec.Code)
	}
}
