package broker

import (
	"net/http"
	"strings"
	"testing"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// Regression tests for the lessons of Apache Pulsar's security
// advisories (docs/security.md lists them). CVE-2021-22160 (alg "none")
// is covered by auth.TestTokenRejections and TestSecAuthenticationFailures,
// CVE-2024-28098/29834 (management with produce/consume grants) by
// brokerauthz.TestAuthorization and admin.TestRouteRules, expired
// credentials on live connections (CVE-2023-31007) by TestSecRefreshRaw,
// and hostname verification (CVE-2022-33681..33683) by TestSecTLSModes.

// CVE-2023-31007 / CVE-2023-30428: an original principal sent by a
// client that is not a proxy (proxyRoles) never changes whose permissions
// apply: Magnetar refuses such a CONNECT outright ("Invalid roles."),
// and X-Original-Principal from a non-proxy role is not honoured.
func TestAdvisoryOriginalPrincipalIgnored(t *testing.T) {
	f := startSecure(t, nil)
	r := dialRaw(t, f.testBroker, false)
	cmd := pbBaseConnect{method: "token", data: f.token(t, "bob", 0)}.cmd()
	cmd.Connect.OriginalPrincipal = ptr("admin")
	cmd.Connect.OriginalAuthMethod = ptr("token")
	cmd.Connect.OriginalAuthData = ptr(f.token(t, "admin", 0))
	r.send(cmd)
	fr := r.next()
	if fr.Type != pb.BaseCommand_ERROR || fr.Cmd.Error.GetError() != pb.ServerError_AuthorizationError {
		t.Fatalf("CONNECT as bob naming original principal admin: %v, want AuthorizationError", fr.Cmd)
	}
	// HTTP: X-Original-Principal from a non-proxy role is not honoured.
	hc := f.httpClient(t, nil)
	req, _ := http.NewRequest("GET", f.httpsURL+"/admin/v2/tenants", nil)
	req.Header.Set("Authorization", "Bearer "+f.token(t, "bob", 0))
	req.Header.Set("X-Original-Principal", "admin")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 && resp.StatusCode != 403 {
		t.Fatalf("X-Original-Principal honoured: %d", resp.StatusCode)
	}
}

// CVE-2022-34321: no admin or lookup endpoint answers without
// credentials (only /metrics, as Pulsar's authenticateMetricsEndpoint
// default, unless configured).
func TestAdvisoryNoUnauthenticatedEndpoints(t *testing.T) {
	f := startSecure(t, func(c *auth.Config) { c.AuthenticateMetricsEndpoint = true })
	hc := f.httpClient(t, nil)
	fill := strings.NewReplacer("{domain}", "persistent", "{tenant}", "private", "{ns}", "auth", "{topic}", "x",
		"{sub}", "s", "{rest...}", "stats", "{cluster...}", "standalone", "{cluster}", "standalone", "{ledger}", "1",
		"{entry}", "0", "{n}", "1", "{sec}", "1", "{ts}", "1", "{version}", "0")
	// Every declared route and paths no route serves.
	paths := []string{"/metrics", "/admin/v2/persistent/private/auth/x/permissions", "/admin/v2/namespaces/private/auth/permissions",
		"/admin/v2/no/such/endpoint", "/"}
	for _, r := range f.Router().Routes() {
		paths = append(paths, fill.Replace(r.Pattern))
	}
	for _, p := range paths {
		for _, m := range []string{"GET", "PUT", "POST", "DELETE"} {
			f.call(t, hc, m, f.httpsURL+p, "", "", 401)
		}
	}
}
