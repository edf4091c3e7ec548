package admincli

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/spf13/cobra"
)

// Cluster verbs of `magnetar admin` (pulsar-admin's brokers, broker-stats
// and namespace bundle commands), added to the nouns of admin.go.

// addClusterVerbs adds the cluster verbs to admin's nouns.
func addClusterVerbs(a *adminCLI, admin *cobra.Command) {
	sub := func(name string) *cobra.Command {
		for _, c := range admin.Commands() {
			if c.Name() == name {
				return c
			}
		}
		panic("BUG: admin noun " + name + " missing")
	}
	var brokerURL string
	owned := leaf("namespaces <cluster>", "List the bundles a broker owns", 1, func(s []string) error {
		if brokerURL == "" {
			return fmt.Errorf("--url host:port (a broker id from `brokers list`) is required")
		}
		return a.get("/admin/v2/brokers/"+url.PathEscape(s[0])+"/"+url.PathEscape(brokerURL)+"/ownedNamespaces", "")
	})
	owned.Flags().StringVar(&brokerURL, "url", "", "broker id (host:webPort)")
	sub("brokers").AddCommand(
		leaf("leader-broker", "Show the leader broker", 0, func([]string) error {
			return a.get("/admin/v2/brokers/leaderBroker", "")
		}),
		leaf("ready", "Check that the broker is ready", 0, func([]string) error {
			data, _, err := a.do("GET", "/admin/v2/brokers/ready", nil)
			if err == nil {
				fmt.Fprintln(a.out, strings.TrimSpace(string(data)))
			}
			return err
		}),
		owned)
	admin.AddCommand(noun("broker-stats", "Broker statistics",
		watchable(a, leaf("load-report", "Show the broker's load report", 0, func([]string) error {
			return a.get("/admin/v2/broker-stats/load-report", "")
		}))))

	ns := sub("namespaces")
	nsArg := func(use, short string, run func(p string) error) *cobra.Command {
		return leaf(use, short, 1, func(s []string) error {
			p, err := nsPath(s[0])
			if err != nil {
				return err
			}
			return run("/admin/v2/namespaces/" + p)
		})
	}
	var bundle string
	unload := nsArg("unload <tenant/namespace>", "Unload a namespace (or one --bundle) from its brokers", func(p string) error {
		if bundle != "" {
			return a.write("PUT", p+"/"+url.PathEscape(bundle)+"/unload", nil)
		}
		return a.write("PUT", p+"/unload", nil)
	})
	unload.Flags().StringVarP(&bundle, "bundle", "b", "", "bundle range, e.g. 0x00000000_0x40000000")
	var splitBundle, algo string
	var splitUnload bool
	split := nsArg("split-bundle <tenant/namespace>", "Split a namespace bundle in two", func(p string) error {
		if splitBundle == "" {
			return fmt.Errorf("--bundle is required")
		}
		q := url.Values{}
		q.Set("unload", fmt.Sprint(splitUnload))
		if algo != "" {
			q.Set("splitAlgorithmName", algo)
		}
		return a.write("PUT", p+"/"+url.PathEscape(splitBundle)+"/split?"+q.Encode(), nil)
	})
	split.Flags().StringVarP(&splitBundle, "bundle", "b", "", "bundle range, e.g. 0x00000000_0x40000000")
	split.Flags().BoolVarP(&splitUnload, "unload", "u", false, "unload the two halves afterwards")
	split.Flags().StringVar(&algo, "split-algorithm-name", "", "range_equally_divide (default) or topic_count_equally_divide")
	ns.AddCommand(
		nsArg("bundles <tenant/namespace>", "Show a namespace's bundle boundaries", func(p string) error { return a.get(p+"/bundles", "") }),
		unload, split)
	// namespaces create --bundles N
	for _, c := range ns.Commands() {
		if c.Name() != "create" {
			continue
		}
		var numBundles int
		c.Flags().IntVar(&numBundles, "bundles", 0, "number of bundles (default: the broker's, 4)")
		c.RunE = func(_ *cobra.Command, args []string) error {
			p, err := nsPath(args[0])
			if err != nil {
				return err
			}
			var body any
			if numBundles > 0 {
				body = map[string]any{"bundles": map[string]any{"numBundles": numBundles}}
			}
			return a.write("PUT", "/admin/v2/namespaces/"+p, body)
		}
	}
}
