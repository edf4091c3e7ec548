package tokencli

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/magnetar-mq/magnetar/auth"
)

// NewCommand builds `magnetar tokens`.
func NewCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "tokens", Short: "Create keys and JWT tokens for token authentication, like `pulsar tokens`"}
	cmd.AddCommand(tokensSecretKeyCmd(), tokensKeyPairCmd(), tokensCreateCmd(), tokensShowCmd(), tokensValidateCmd())
	return cmd
}

func tokensSecretKeyCmd() *cobra.Command {
	var alg, output string
	var b64 bool
	cmd := &cobra.Command{
		Use:   "create-secret-key",
		Short: "Make a random HMAC key: raw bytes (the key file Pulsar reads), or base64 with -b",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			k, err := auth.NewSecretKey(alg)
			if err != nil {
				return err
			}
			out := k
			if b64 {
				out = []byte(base64.StdEncoding.EncodeToString(k))
			}
			if output != "" {
				return os.WriteFile(output, out, 0o600)
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	cmd.Flags().StringVarP(&alg, "signature-algorithm", "a", "HS256", "HS256, HS384 or HS512")
	cmd.Flags().StringVarP(&output, "output", "o", "", "write the key to this file (mode 0600) instead of stdout")
	cmd.Flags().BoolVarP(&b64, "base64", "b", false, "encode the key in base64")
	return cmd
}

func tokensKeyPairCmd() *cobra.Command {
	var alg, privOut, pubOut string
	cmd := &cobra.Command{
		Use:   "create-key-pair",
		Short: "Make a key pair: private key PKCS#8 DER, public key X.509 DER",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if privOut == "" || pubOut == "" {
				return errors.New("--output-private-key and --output-public-key are required")
			}
			priv, pub, err := auth.NewKeyPair(alg)
			if err != nil {
				return err
			}
			if err := os.WriteFile(privOut, priv, 0o600); err != nil {
				return err
			}
			return os.WriteFile(pubOut, pub, 0o644)
		},
	}
	cmd.Flags().StringVarP(&alg, "signature-algorithm", "a", "RS256", "RS256/384/512, ES256/384/512 or EdDSA")
	cmd.Flags().StringVar(&privOut, "output-private-key", "", "file for the private key")
	cmd.Flags().StringVar(&pubOut, "output-public-key", "", "file for the public key")
	return cmd
}

// signingKey reads -sk (HMAC secret) or -pk (private key).
func signingKey(secret, private string) (any, error) {
	switch {
	case secret != "" && private != "":
		return nil, errors.New("give only one of --secret-key and --private-key")
	case secret != "":
		return auth.ReadKey(secret)
	case private != "":
		b, err := auth.ReadKey(private)
		if err != nil {
			return nil, err
		}
		return auth.ParsePrivateKey(b)
	}
	return nil, errors.New("one of --secret-key or --private-key is required")
}

func tokensCreateCmd() *cobra.Command {
	var subject, expiry, secret, private, alg string
	var headers []string
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Sign a token for --subject; prints it on stdout",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if subject == "" {
				return errors.New("--subject is required")
			}
			key, err := signingKey(secret, private)
			if err != nil {
				return err
			}
			spec := auth.TokenSpec{Subject: subject, Headers: map[string]any{}}
			if cmd.Flags().Changed("signature-algorithm") {
				spec.Alg = alg // else HS256, or by private key type
			}
			if expiry != "" {
				d, err := auth.ParseDuration(expiry)
				if err != nil {
					return err
				}
				spec.Expires = time.Now().Add(d)
			}
			for _, h := range headers {
				k, v, ok := strings.Cut(h, "=")
				if !ok || k == "" {
					return fmt.Errorf("--headers %q: want key=value", h)
				}
				spec.Headers[k] = v
			}
			tok, err := auth.CreateToken(key, spec)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), tok)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&subject, "subject", "s", "", "the role the token grants (sub claim)")
	fl.StringVarP(&expiry, "expiry-time", "e", "", "lifetime, e.g. 30m, 1h, 3d, 1y (default: never expires)")
	fl.StringVar(&secret, "secret-key", "", "HMAC key: data:;base64,..., file:///path, a path, or base64")
	fl.StringVar(&private, "private-key", "", "private key (PKCS#8 DER or PEM), same forms")
	fl.StringVarP(&alg, "signature-algorithm", "a", "HS256", "algorithm (default HS256 with --secret-key; by key type with --private-key)")
	fl.StringSliceVar(&headers, "headers", nil, "extra JOSE header fields key=value (e.g. kid=2025)")
	// Pulsar's short forms.
	fl.Lookup("secret-key").Shorthand = ""
	addPulsarAlias(cmd, "sk", "secret-key")
	addPulsarAlias(cmd, "pk", "private-key")
	return cmd
}

// addPulsarAlias accepts Pulsar's two-letter option (-sk, -pk) as
// --sk / --pk too, since pflag shorthands are one letter.
func addPulsarAlias(cmd *cobra.Command, alias, target string) {
	f := cmd.Flags().Lookup(target)
	cmd.Flags().Var(f.Value, alias, "same as --"+target)
	_ = cmd.Flags().MarkHidden(alias)
}

// tokenInput reads the token from the argument, --token-file, --stdin or
// $TOKEN, trimmed.
func tokenInput(cmd *cobra.Command, args []string, file string, stdin bool) (string, error) {
	var tok string
	switch {
	case len(args) == 1:
		tok = args[0]
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return "", err
		}
		tok = string(b)
	case stdin:
		b, err := io.ReadAll(bufio.NewReader(cmd.InOrStdin()))
		if err != nil {
			return "", err
		}
		tok = string(b)
	default:
		tok = os.Getenv("TOKEN")
	}
	tok = strings.TrimSpace(tok)
	if tok == "" {
		return "", errors.New("no token: give it as an argument, with --token-file or --stdin, or in $TOKEN")
	}
	return tok, nil
}

func tokensShowCmd() *cobra.Command {
	var file string
	var stdin bool
	cmd := &cobra.Command{
		Use:   "show [TOKEN]",
		Short: "Print a token's header and claims (not verified)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			tok, err := tokenInput(cmd, args, file, stdin)
			if err != nil {
				return err
			}
			parts := strings.Split(tok, ".")
			if len(parts) != 3 {
				return errors.New("not a JWT: want header.payload.signature")
			}
			for i, p := range parts[:2] {
				b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(p, "="))
				if err != nil || !json.Valid(b) {
					return fmt.Errorf("not a JWT: part %d is not base64url JSON", i+1)
				}
				if i == 1 {
					fmt.Fprintln(cmd.OutOrStdout(), "---")
				}
				fmt.Fprintln(cmd.OutOrStdout(), string(b))
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "token-file", "f", "", "read the token from this file")
	cmd.Flags().BoolVarP(&stdin, "stdin", "i", false, "read the token from stdin")
	return cmd
}

func tokensValidateCmd() *cobra.Command {
	var file, secret, public string
	var stdin bool
	cmd := &cobra.Command{
		Use:   "validate [TOKEN]",
		Short: "Verify a token's signature and expiry; prints its claims",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			tok, err := tokenInput(cmd, args, file, stdin)
			if err != nil {
				return err
			}
			tc, err := verifyingKey(secret, public)
			if err != nil {
				return err
			}
			p, err := auth.NewTokenProvider(tc)
			if err != nil {
				return err
			}
			if _, err := p.Validate(tok); err != nil {
				return fmt.Errorf("invalid token: %s", strings.TrimPrefix(err.Error(), auth.ErrAuthentication.Error()+": token: "))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "{%s}\n", claimsText(tok))
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "token-file", "f", "", "read the token from this file")
	cmd.Flags().BoolVarP(&stdin, "stdin", "i", false, "read the token from stdin")
	cmd.Flags().StringVar(&secret, "secret-key", "", "HMAC key (same forms as create)")
	cmd.Flags().StringVar(&public, "public-key", "", "public key (X.509 DER or PEM), same forms")
	addPulsarAlias(cmd, "sk", "secret-key")
	addPulsarAlias(cmd, "pk", "public-key")
	return cmd
}

// verifyingKey is the token configuration of validate's --secret-key or
// --public-key (exactly one).
func verifyingKey(secret, public string) (auth.TokenConfig, error) {
	var tc auth.TokenConfig
	var err error
	switch {
	case secret != "" && public != "":
		return tc, errors.New("give only one of --secret-key and --public-key")
	case secret != "":
		tc.SecretKey, err = auth.ReadKey(secret)
		return tc, err
	case public != "":
		b, err := auth.ReadKey(public)
		if err != nil {
			return tc, err
		}
		tc.PublicKey, err = auth.ParsePublicKey(b)
		return tc, err
	default:
		return tc, errors.New("one of --secret-key or --public-key is required")
	}
}

// claimsText is a verified token's claims as k=v, sorted by key.
func claimsText(tok string) string {
	b, _ := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[1])
	var claims map[string]any
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.UseNumber()
	_ = d.Decode(&claims)
	keys := make([]string, 0, len(claims))
	for k := range claims {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	kv := make([]string, len(keys))
	for i, k := range keys {
		kv[i] = fmt.Sprintf("%s=%v", k, claims[k])
	}
	return strings.Join(kv, ", ")
}
