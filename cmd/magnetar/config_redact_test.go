package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/magnetar-mq/magnetar/internal/testenv"
)

// dumpConfig runs `magnetar config dump args...` in process, on a
// command tree of its own.
func dumpConfig(t *testing.T, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	root := newRootCmd()
	root.SetOut(&out)
	root.SetArgs(append([]string{"config", "dump"}, args...))
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// TestConfigDumpRedactsSecrets: inline secrets (an HMAC key as data:, an
// offload secret, client auth parameters with a token) print as
// <redacted> unless --show-secrets; file references stay visible.
func TestConfigDumpRedactsSecrets(t *testing.T) {
	const key = "data:;base64,c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldC0xMjM0"
	path := testenv.WriteFile(t, "test.conf", "tokenSecretKey="+key+"\n"+
		"s3ManagedLedgerOffloadCredentialSecret=s3cr3tAccess\n"+
		"brokerClientAuthenticationParameters=token:eyJhbGciOiJIUzI1NiJ9.e30.sig\n"+
		"tokenPublicKey=file:///etc/magnetar/pub.der\n")
	out := dumpConfig(t, "standalone", "--config", path)
	for _, leak := range []string{key, "s3cr3tAccess", "eyJhbGciOiJIUzI1NiJ9"} {
		if strings.Contains(out, leak) {
			t.Errorf("dump shows the secret %q:\n%s", leak, out)
		}
	}
	for _, want := range []string{"tokenSecretKey=<redacted>", "offload-credential-secret=<redacted>",
		"brokerClientAuthenticationParameters=<redacted>", "tokenPublicKey=file:///etc/magnetar/pub.der"} {
		if !strings.Contains(out, want) {
			t.Errorf("dump lacks %q:\n%s", want, out)
		}
	}
	out = dumpConfig(t, "--show-secrets", "standalone", "--config", path)
	for _, want := range []string{"tokenSecretKey=" + key, "offload-credential-secret=s3cr3tAccess"} {
		if !strings.Contains(out, want) {
			t.Errorf("--show-secrets: dump lacks %q:\n%s", want, out)
		}
	}
}

func TestRedact(t *testing.T) {
	for _, c := range []struct{ flag, in, want string }{
		{"tokenSecretKey", "c2VjcmV0", "<redacted>"},
		{"tokenSecretKey", "/etc/secret.key", "/etc/secret.key"},
		{"tokenSecretKey", "", ""},
		{"brokerClientAuthenticationParameters", "tlsCertFile:/a.pem,tlsKeyFile:/a.key", "<redacted>"},
		{"brokerClientAuthenticationParameters", "file:///run/token", "file:///run/token"},
		{"max-message-size", "1048576", "1048576"},
		{"tokenPublicKey", "MIIBIjAN", "MIIBIjAN"},
	} {
		if got := redact(c.flag, c.in); got != c.want {
			t.Errorf("redact(%s, %q) = %q, want %q", c.flag, c.in, got, c.want)
		}
	}
}
