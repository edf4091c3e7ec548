package functions

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/magnetar-mq/magnetar/auth"
)

// Instance credentials, as Pulsar's worker hands them out with its
// function authentication provider (functionAuthProviderClassName):
//
//   - With authentication off, instances connect without credentials.
//   - With authentication on, a create caches the submitter's credentials
//     with the function (Record.Auth): with Pulsar's
//     ClearTextFunctionTokenAuthProvider, the token of the request's
//     "Authorization: Bearer" header. Every worker that starts one of its
//     instances, after any restart, hands the instance that token
//     (plugin AuthenticationToken, parameters {"token":"..."}), so the
//     function acts on brokers and on the worker's state API as the role
//     that deployed it, with that role's grants and no more. An update
//     keeps the stored token unless its updateOptions say updateAuthData
//     (pulsar-admin --update-auth-data); a delete removes it with the
//     record.
//   - An anonymous submitter's function runs without credentials (the
//     broker gives it the anonymous role, if any).
//   - A submitter that authenticated otherwise (basic, TLS) has no token
//     to hand on: the create is refused (400), where Pulsar's provider
//     fails with a 500. So is one that came through a proxy as an
//     original principal: the token in the request is the proxy's.
//   - The worker's own credentials (brokerClient*) never reach an
//     instance; Pulsar hands them to every instance when no provider is
//     configured, Magnetar always uses the token provider.
//
// The token is stored in the metadata store with the record (as Pulsar
// stores it in its function metadata), never returned by GET or list,
// never logged, and reaches the instance only on a pipe (confFD), not in
// its environment, arguments or files.

// Function authentication providers (Pulsar's class names).
const (
	// ProviderToken is the only provider: the submitter's token.
	ProviderToken = "org.apache.pulsar.functions.auth.ClearTextFunctionTokenAuthProvider"
	// tokenPlugin is the client plugin instances use (pulsar-client-go and
	// the Java client accept this name).
	tokenPlugin = "org.apache.pulsar.client.impl.auth.AuthenticationToken"
)

// checkAuthProvider validates Options.FunctionAuthProvider.
func checkAuthProvider(name string) error {
	switch name {
	case "", ProviderToken:
		return nil
	case "org.apache.pulsar.functions.auth.KubernetesSecretsTokenAuthProvider",
		"org.apache.pulsar.functions.auth.KubernetesServiceAccountTokenAuthProvider":
		return fmt.Errorf("functions: functionAuthProviderClassName %s belongs to Pulsar's Kubernetes runtime, which Magnetar does not have; use %s", name, ProviderToken)
	}
	return fmt.Errorf("functions: functionAuthProviderClassName %q is not supported; use %s", name, ProviderToken)
}

// AuthSpec is a function's cached credentials (Pulsar's
// FunctionAuthenticationSpec): Data is the token.
type AuthSpec struct {
	Provider string `json:"provider"`
	Data     string `json:"data"`
}

// String keeps the token out of any formatted output.
func (a *AuthSpec) String() string {
	if a == nil {
		return "<none>"
	}
	return "<token of " + a.Provider + ">"
}

// updateOptions is Pulsar's UpdateOptions part of an update.
type updateOptions struct {
	UpdateAuthData bool `json:"updateAuthData"`
}

// cacheAuth returns the credentials a create (or an update with
// updateAuthData) stores with the function: nil with authentication
// off or for an anonymous submitter.
func (w *Worker) cacheAuth(r *http.Request) (*AuthSpec, error) {
	if !w.opts.AuthenticationEnabled {
		return nil, nil
	}
	id, _ := auth.IdentityFromContext(r.Context())
	role := auth.RoleFromContext(r.Context())
	switch {
	case id.Method == auth.MethodToken && id.Role == role:
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if tok = strings.TrimSpace(tok); !ok || tok == "" {
			return nil, badf("the request authenticated with a token that is not in its Authorization header")
		}
		return &AuthSpec{Provider: ProviderToken, Data: tok}, nil
	case id.Method == auth.MethodToken:
		return nil, badf("this request came through a proxy as role %s: its token is the proxy's, and a function runs with its submitter's token (%s); submit it to the worker directly with %s's token", role, ProviderToken, role)
	case id.Method == "" && id.Role != "":
		return nil, nil // anonymous: the instance connects without credentials
	case id.Method == "":
		// Authentication is on, yet no identity reached the handler: a
		// route that does not authenticate. Nothing to cache.
		return nil, nil
	}
	return nil, badf("role %s authenticated with %s: a function runs with its submitter's token (%s), so deploy or update it with a token", role, id.Method, ProviderToken)
}

// updateAuth reads an update's updateOptions: with updateAuthData the
// request's credentials replace the stored ones (replace true).
func (w *Worker) updateAuth(r *http.Request, opts []byte) (a *AuthSpec, replace bool, err error) {
	if len(opts) == 0 {
		return nil, false, nil
	}
	var uo updateOptions
	if err := json.Unmarshal(opts, &uo); err != nil {
		return nil, false, badf("updateOptions JSON: %v", err)
	}
	if !uo.UpdateAuthData {
		return nil, false, nil
	}
	a, err = w.cacheAuth(r)
	return a, err == nil, err
}

// instanceCredentials are what an instance presents to brokers and to
// the worker: Pulsar's client plugin and parameters, and the trust
// store for pulsar+ssl:// and https:// (the worker's
// brokerClientTrustCertsFilePath).
type instanceCredentials struct {
	Plugin, Params string
	TrustCertsFile string
}

func (w *Worker) credentialsOf(rec *Record) instanceCredentials {
	c := instanceCredentials{TrustCertsFile: w.opts.Client.TrustCertsFile}
	if a := rec.Auth; w.opts.AuthenticationEnabled && a != nil && a.Provider == ProviderToken && a.Data != "" {
		// JSON parameters: pulsar-client-go (which Pulsar's Go SDK uses)
		// reads no other form; the Java client reads it too.
		params, _ := json.Marshal(map[string]string{"token": a.Data})
		c.Plugin, c.Params = tokenPlugin, string(params)
	}
	return c
}

// instanceConfJSON is the configuration an instance reads on confFD:
// Pulsar's GoInstanceConfig (pulsargo.go) for uploaded executables, only
// the credentials for builtin connectors. Indented: Pulsar's SDK reads
// the file as YAML, of which this JSON is a subset.
func instanceConfJSON(v any) ([]byte, error) {
	return json.MarshalIndent(v, "", " ")
}

// builtinConf is the configuration a builtin connector reads on confFD.
type builtinConf struct {
	ClientAuthenticationPlugin     string `json:"clientAuthenticationPlugin"`
	ClientAuthenticationParameters string `json:"clientAuthenticationParameters"`
	TLSTrustCertsFilePath          string `json:"tlsTrustCertsFilePath"`
}

func (w *Worker) builtinConf(rec *Record) ([]byte, error) {
	c := w.credentialsOf(rec)
	return instanceConfJSON(builtinConf{ClientAuthenticationPlugin: c.Plugin, ClientAuthenticationParameters: c.Params,
		TLSTrustCertsFilePath: c.TrustCertsFile})
}

// confPipe makes the pipe an instance reads its configuration on. Under
// a root worker its read end belongs to the instance account, so that
// the instance may open it again as /dev/fd/4 (Pulsar's Go SDK reads a
// path), not only read the descriptor.
func (w *Worker) confPipe() (r, wr *os.File, err error) {
	if r, wr, err = os.Pipe(); err != nil {
		return nil, nil, err
	}
	if w.runAs != nil {
		if err := unix.Fchown(int(r.Fd()), int(w.runAs.uid), int(w.runAs.gid)); err != nil {
			r.Close()
			wr.Close()
			return nil, nil, fmt.Errorf("functions: configuration pipe for %s: %w", w.runAs.name, err)
		}
	}
	return r, wr, nil
}
