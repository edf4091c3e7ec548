package e2e

import (
	"errors"
	"testing"

	"github.com/apache/pulsar-client-go/pulsaradmin"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/rest"
)

// TestDynamicSuperUserRoles: with authentication and authorization on,
// a superUserRoles override made through pulsaradmin applies to the next
// authorization check, as in Pulsar: a role added is a superuser, a
// role removed is not, and removing the override restores the file's
// roles. Only a superuser may change the key.
func TestDynamicSuperUserRoles(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a standalone")
	}
	key, tok := tokenKey(t, t.TempDir())
	adminTok := tok("admin")
	p := startStandalone(t, t.TempDir(), "--authenticationEnabled", "--authenticationProviders", "token", "--tokenSecretKey", "file://"+key,
		"--authorizationEnabled", "--superUserRoles", "admin",
		"--brokerClientAuthenticationPlugin", "token", "--brokerClientAuthenticationParameters", "token:"+adminTok)
	as := func(token string) admin.Brokers {
		t.Helper()
		adm, err := pulsaradmin.NewClient(&pulsaradmin.Config{WebServiceURL: p.http, Token: token})
		if err != nil {
			t.Fatal(err)
		}
		return adm.Brokers()
	}
	root, bob := as(adminTok), as(tok("bob"))
	// code is the HTTP status of a superuser-only call made as br.
	code := func(br admin.Brokers) int {
		t.Helper()
		_, err := br.GetAllDynamicConfigurations()
		var re rest.Error
		switch {
		case err == nil:
			return 200
		case errors.As(err, &re):
			return re.Code
		}
		t.Fatal(err)
		return 0
	}
	want := func(step string, br admin.Brokers, c int) {
		t.Helper()
		if got := code(br); got != c {
			t.Fatalf("%s: superuser call answered %d, want %d", step, got, c)
		}
	}
	want("file's roles", bob, 403)
	// A non-superuser cannot make itself one.
	if err := bob.UpdateDynamicConfiguration("superUserRoles", "admin,bob"); err == nil {
		t.Fatal("bob changed superUserRoles")
	} else if re, ok := err.(rest.Error); !ok || re.Code != 403 {
		t.Fatalf("bob's update: %v, want 403", err)
	}
	want("after bob's refused update", bob, 403)

	if err := root.UpdateDynamicConfiguration("superUserRoles", "admin, bob"); err != nil {
		t.Fatal(err)
	}
	want("bob added", bob, 200)
	// A superuser by override may change the key too; removing bob
	// takes effect on his next call.
	if err := bob.UpdateDynamicConfiguration("superUserRoles", "admin"); err != nil {
		t.Fatal(err)
	}
	want("bob removed", bob, 403)
	want("admin kept", root, 200)

	if err := root.UpdateDynamicConfiguration("superUserRoles", "bob"); err != nil {
		t.Fatal(err)
	}
	want("bob alone", bob, 200)
	want("admin dropped", root, 403)
	if err := bob.DeleteDynamicConfiguration("superUserRoles"); err != nil {
		t.Fatal(err)
	}
	want("override deleted: bob", bob, 403)
	want("override deleted: admin", root, 200)
}
