package admincli

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/spf13/cobra"

	"github.com/magnetar-mq/magnetar/auth"
)

// Credentials and TLS for `magnetar admin` (pulsar-admin's --auth-plugin,
// --auth-params, --tls-trust-cert-path, --tls-allow-insecure), and the
// permission commands of namespaces and topics.

// addAdminSecurity adds the credential and TLS flags to admin and builds
// a's HTTP client from them before any verb runs.
func addAdminSecurity(a *adminCLI, admin *cobra.Command) {
	var sec struct {
		plugin, params, trust string
		insecure              bool
	}
	pf := admin.PersistentFlags()
	pf.StringVar(&sec.plugin, "auth-plugin", "", "authentication plugin: token, tls, basic (or Pulsar's class names)")
	pf.StringVar(&sec.params, "auth-params", "", "plugin parameters: token:<jwt> | file:///path; tlsCertFile:..,tlsKeyFile:..; {\"userId\":..,\"password\":..}")
	pf.StringVar(&sec.trust, "tls-trust-cert-path", "", "CA bundle that verifies an https:// admin URL (default: system roots)")
	pf.BoolVar(&sec.insecure, "tls-allow-insecure", false, "do not verify the server certificate (testing only)")
	admin.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		a.out = cmd.OutOrStdout()
		c, err := newAdminHTTPClient(sec.plugin, sec.params, sec.trust, sec.insecure)
		if err != nil {
			return err
		}
		a.client = c
		return nil
	}
}

// authTransport adds the Authorization header to every request.
type authTransport struct {
	base http.RoundTripper
	ca   *auth.ClientAuth
}

func (t authTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if t.ca != nil {
		h, err := t.ca.HTTPHeader()
		if err != nil {
			return nil, err
		}
		if h != "" {
			r = r.Clone(r.Context())
			r.Header.Set("Authorization", h)
		}
	}
	return t.base.RoundTrip(r)
}

// newAdminHTTPClient builds the admin CLI's client from Pulsar-style
// options; a tls plugin's certificate is presented on https connections.
func newAdminHTTPClient(plugin, params, trust string, insecure bool) (*http.Client, error) {
	ca, err := auth.ParseClientAuth(plugin, params)
	if err != nil {
		return nil, err
	}
	var cert, key string
	if ca != nil && ca.Method == auth.MethodTLS {
		cert, key = ca.CertFile, ca.KeyFile
	}
	var tc *tls.Config
	if trust != "" || cert != "" || insecure {
		if tc, err = auth.ClientTLS(trust, cert, key, insecure); err != nil {
			return nil, err
		}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tc
	return &http.Client{Timeout: 30 * time.Second, Transport: authTransport{base: tr, ca: ca}}, nil
}

func nsPermissionCmds(a *adminCLI) []*cobra.Command {
	var role, actions string
	grant := &cobra.Command{Use: "grant-permission <tenant/namespace>", Short: "Grant a role actions on a namespace",
		Args: cobra.ExactArgs(1), RunE: func(_ *cobra.Command, args []string) error {
			p, err := nsPath(args[0])
			if err != nil {
				return err
			}
			if role == "" || actions == "" {
				return fmt.Errorf("--role and --actions are required")
			}
			return a.write("POST", "/admin/v2/namespaces/"+p+"/permissions/"+url.PathEscape(role), splitList(actions))
		}}
	grant.Flags().StringVar(&role, "role", "", "role to grant")
	grant.Flags().StringVar(&actions, "actions", "", "comma list: produce, consume, functions, sources, sinks, packages")
	var rrole string
	revoke := &cobra.Command{Use: "revoke-permission <tenant/namespace>", Short: "Revoke a role's namespace grant",
		Args: cobra.ExactArgs(1), RunE: func(_ *cobra.Command, args []string) error {
			p, err := nsPath(args[0])
			if err != nil {
				return err
			}
			if rrole == "" {
				return fmt.Errorf("--role is required")
			}
			return a.write("DELETE", "/admin/v2/namespaces/"+p+"/permissions/"+url.PathEscape(rrole), nil)
		}}
	revoke.Flags().StringVar(&rrole, "role", "", "role to revoke")
	perms := &cobra.Command{Use: "permissions <tenant/namespace>", Short: "List a namespace's grants (role: actions)",
		Args: cobra.ExactArgs(1), RunE: func(_ *cobra.Command, args []string) error {
			p, err := nsPath(args[0])
			if err != nil {
				return err
			}
			return a.get("/admin/v2/namespaces/"+p+"/permissions", "")
		}}
	var sroles string
	sgrant := &cobra.Command{Use: "grant-subscription-permission <tenant/namespace> <subscription>", Short: "Restrict a subscription to roles",
		Args: cobra.ExactArgs(2), RunE: func(_ *cobra.Command, args []string) error {
			p, err := nsPath(args[0])
			if err != nil {
				return err
			}
			if sroles == "" {
				return fmt.Errorf("--roles is required")
			}
			return a.write("POST", "/admin/v2/namespaces/"+p+"/permissions/subscription/"+url.PathEscape(args[1]), splitList(sroles))
		}}
	sgrant.Flags().StringVar(&sroles, "roles", "", "comma list of roles")
	var srrole string
	srevoke := &cobra.Command{Use: "revoke-subscription-permission <tenant/namespace> <subscription>", Short: "Remove a role from a subscription's roles",
		Args: cobra.ExactArgs(2), RunE: func(_ *cobra.Command, args []string) error {
			p, err := nsPath(args[0])
			if err != nil {
				return err
			}
			if srrole == "" {
				return fmt.Errorf("--role is required")
			}
			return a.write("DELETE", "/admin/v2/namespaces/"+p+"/permissions/"+url.PathEscape(args[1])+"/"+url.PathEscape(srrole), nil)
		}}
	srevoke.Flags().StringVar(&srrole, "role", "", "role to remove")
	var mode string
	setMode := &cobra.Command{Use: "set-subscription-auth-mode <tenant/namespace>", Short: "Set the subscription auth mode: None or Prefix",
		Args: cobra.ExactArgs(1), RunE: func(_ *cobra.Command, args []string) error {
			p, err := nsPath(args[0])
			if err != nil {
				return err
			}
			return a.write("POST", "/admin/v2/namespaces/"+p+"/subscriptionAuthMode", mode)
		}}
	setMode.Flags().StringVarP(&mode, "subscription-auth-mode", "m", "None", "None or Prefix")
	return []*cobra.Command{grant, revoke, perms, sgrant, srevoke, setMode}
}

func topicPermissionCmds(a *adminCLI) []*cobra.Command {
	var role, actions, rrole string
	grant := topicCmd("grant-permission <topic>", "Grant a role actions on a topic", 1, func(p string, _ []string) error {
		if role == "" || actions == "" {
			return fmt.Errorf("--role and --actions are required")
		}
		return a.write("POST", p+"/permissions/"+url.PathEscape(role), splitList(actions))
	})
	grant.Flags().StringVar(&role, "role", "", "role to grant")
	grant.Flags().StringVar(&actions, "actions", "", "comma list: produce, consume, ...")
	revoke := topicCmd("revoke-permission <topic>", "Revoke a role's topic grant", 1, func(p string, _ []string) error {
		if rrole == "" {
			return fmt.Errorf("--role is required")
		}
		return a.write("DELETE", p+"/permissions/"+url.PathEscape(rrole), nil)
	})
	revoke.Flags().StringVar(&rrole, "role", "", "role to revoke")
	perms := topicCmd("permissions <topic>", "List the grants that apply to a topic (namespace and topic level)", 1, func(p string, _ []string) error {
		return a.get(p+"/permissions", "")
	})
	return []*cobra.Command{grant, revoke, perms}
}
