package functions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/httpapi"
)

// who is how a request authenticated, as the HTTP guard records it.
type who struct {
	role, method, original string
	header                 string
}

func authRequest(t *testing.T, method, path string, id who, parts map[string]string) *http.Request {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for k, v := range parts {
		if k == "data" {
			fw, _ := mw.CreateFormFile("data", "prog")
			fw.Write([]byte(v))
			continue
		}
		mw.WriteField(k, v)
	}
	mw.Close()
	r := httptest.NewRequest(method, path, &body)
	r.Header.Set("Content-Type", mw.FormDataContentType())
	if id.header != "" {
		r.Header.Set("Authorization", id.header)
	}
	effective := id.role
	if id.original != "" {
		effective = id.original
	}
	return r.WithContext(auth.WithIdentity(auth.WithRole(r.Context(), effective), auth.Identity{Role: id.role, Method: id.method}))
}

// TestInstanceAuthCache: with authentication on, a create stores the
// submitter's token with the function (and nowhere the API returns), an
// update keeps it unless updateOptions.updateAuthData replaces it, a
// delete removes it with the record; submitters without a token of
// their own are refused and nothing is stored; with authentication off
// nothing is stored.
func TestInstanceAuthCache(t *testing.T) {
	st := openStore(t)
	w, err := NewWorker(Options{Metadata: st.md, ID: "w", DataDir: t.TempDir(), AuthenticationEnabled: true})
	if err != nil {
		t.Fatal(err)
	}
	params := httpapi.Params{"tenant": "acme", "namespace": "ns", "name": "f"}
	cfg := `{"inputs":["in"],"output":"out"}`
	do := func(h func(*call), method string, id who, parts map[string]string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		w.kindHandler(KindFunction, h)(rec, authRequest(t, method, "/admin/v3/functions/acme/ns/f", id, parts), params)
		return rec
	}
	stored := func() *AuthSpec {
		r, _, err := w.st.get(context.Background(), KindFunction, "acme", "ns", "f")
		if err != nil {
			t.Fatal(err)
		}
		return r.Auth
	}
	const aliceTok, carolTok = "alice-token-123", "carol-token-456"
	alice := who{role: "alice", method: auth.MethodToken, header: "Bearer " + aliceTok}

	// Refused submitters change nothing.
	for _, c := range []struct {
		name string
		id   who
		want string
	}{
		{"basic", who{role: "alice", method: auth.MethodBasic, header: "Basic YWxpY2U6cHc="}, "authenticated with basic"},
		{"tls", who{role: "alice", method: auth.MethodTLS}, "authenticated with tls"},
		{"proxy", who{role: "proxy", method: auth.MethodToken, original: "alice", header: "Bearer proxy-token"}, "through a proxy"},
	} {
		rec := do(w.handleCreate, http.MethodPost, c.id, map[string]string{"functionConfig": cfg, "data": "x"})
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), c.want) {
			t.Errorf("%s submitter: %d %s", c.name, rec.Code, rec.Body)
		}
		if _, _, err := w.st.get(context.Background(), KindFunction, "acme", "ns", "f"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("%s submitter: stored anyway (%v)", c.name, err)
		}
	}

	if rec := do(w.handleCreate, http.MethodPost, alice, map[string]string{"functionConfig": cfg, "data": "x"}); rec.Code != http.StatusNoContent {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	if a := stored(); a == nil || a.Data != aliceTok || a.Provider != ProviderToken {
		t.Fatalf("stored credentials %+v", a)
	}
	r, _, _ := w.st.get(context.Background(), KindFunction, "acme", "ns", "f")
	if got := w.credentialsOf(r); got.Plugin != tokenPlugin || got.Params != `{"token":"`+aliceTok+`"}` {
		t.Fatalf("instance credentials %+v", got)
	}
	if s := r.Auth.String(); strings.Contains(s, aliceTok) {
		t.Fatalf("AuthSpec prints its token: %s", s)
	}
	spec, _ := json.Marshal(r.Spec)
	for _, rec := range []*httptest.ResponseRecorder{do(w.handleGet, http.MethodGet, alice, nil), do(w.handleList, http.MethodGet, alice, nil)} {
		if rec.Code != http.StatusOK || strings.Contains(rec.Body.String(), aliceTok) {
			t.Fatalf("GET/list: %d, holds the token: %v", rec.Code, strings.Contains(rec.Body.String(), aliceTok))
		}
	}
	if strings.Contains(string(spec), aliceTok) {
		t.Fatal("the spec handed to instances in their environment holds the token")
	}

	carol := who{role: "carol", method: auth.MethodToken, header: "Bearer " + carolTok}
	if rec := do(w.handleUpdate, http.MethodPut, carol, map[string]string{"functionConfig": `{"userConfig":{"k":"v"}}`}); rec.Code != http.StatusNoContent {
		t.Fatalf("update: %d %s", rec.Code, rec.Body)
	}
	if a := stored(); a == nil || a.Data != aliceTok {
		t.Fatalf("an update without updateAuthData changed the credentials: %+v", a)
	}
	if rec := do(w.handleUpdate, http.MethodPut, carol, map[string]string{"updateOptions": `{"updateAuthData":false}`}); rec.Code != http.StatusNoContent || stored().Data != aliceTok {
		t.Fatalf("updateAuthData false: %d %s", rec.Code, rec.Body)
	}
	if rec := do(w.handleUpdate, http.MethodPut, who{role: "carol", method: auth.MethodBasic, header: "Basic eA=="},
		map[string]string{"updateOptions": `{"updateAuthData":true}`}); rec.Code != http.StatusBadRequest || stored().Data != aliceTok {
		t.Fatalf("updateAuthData by a basic submitter: %d %s", rec.Code, rec.Body)
	}
	if rec := do(w.handleUpdate, http.MethodPut, carol, map[string]string{"updateOptions": `{"updateAuthData":true}`}); rec.Code != http.StatusNoContent {
		t.Fatalf("updateAuthData: %d %s", rec.Code, rec.Body)
	}
	if a := stored(); a == nil || a.Data != carolTok {
		t.Fatalf("updateAuthData kept %+v", a)
	}
	if rec := do(w.handleDelete, http.MethodDelete, carol, nil); rec.Code != http.StatusNoContent {
		t.Fatalf("delete: %d %s", rec.Code, rec.Body)
	}
	if _, _, err := w.st.get(context.Background(), KindFunction, "acme", "ns", "f"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("record (and its token) after delete: %v", err)
	}

	// An anonymous submitter's function carries no credentials.
	if rec := do(w.handleCreate, http.MethodPost, who{role: "anon"}, map[string]string{"functionConfig": cfg, "data": "x"}); rec.Code != http.StatusNoContent || stored() != nil {
		t.Fatalf("anonymous create: %d %s", rec.Code, rec.Body)
	}

	// Authentication off: a token in the request is not stored.
	w2, err := NewWorker(Options{Metadata: openStore(t).md, ID: "w", DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	w2.kindHandler(KindFunction, w2.handleCreate)(rec, authRequest(t, http.MethodPost, "/", who{header: "Bearer " + aliceTok},
		map[string]string{"functionConfig": cfg, "data": "x"}), params)
	if r, _, err := w2.st.get(context.Background(), KindFunction, "acme", "ns", "f"); rec.Code != http.StatusNoContent || err != nil || r.Auth != nil {
		t.Fatalf("authentication off: %d %v %+v", rec.Code, err, r)
	}

	if _, err := NewWorker(Options{Metadata: openStore(t).md, ID: "w", DataDir: t.TempDir(),
		FunctionAuthProvider: "org.apache.pulsar.functions.auth.KubernetesSecretsTokenAuthProvider"}); err == nil {
		t.Fatal("a Kubernetes auth provider was accepted")
	}
}
