package admincli

import (
	"errors"
	"net/url"

	"github.com/spf13/cobra"
)

// Geo-replication commands of `magnetar admin`, named as pulsar-admin's:
// clusters list|get|create|update|delete|get-peer-clusters|
// update-peer-clusters, namespaces set-clusters|get-clusters, topics
// set-replication-clusters|get-replication-clusters|
// remove-replication-clusters. Replication stats are in `topics stats`
// (section "replication").

func adminClustersCmd(a *adminCLI) *cobra.Command {
	var webURL, webURLTLS, brokerURL, brokerURLTLS, authPlugin, authParams string
	var peers string
	body := func() map[string]any {
		m := map[string]any{}
		for k, v := range map[string]string{"serviceUrl": webURL, "serviceUrlTls": webURLTLS,
			"brokerServiceUrl": brokerURL, "brokerServiceUrlTls": brokerURLTLS,
			"authenticationPlugin": authPlugin, "authenticationParameters": authParams} {
			if v != "" {
				m[k] = v
			}
		}
		if peers != "" {
			m["peerClusterNames"] = splitList(peers)
		}
		return m
	}
	create := leaf("create <cluster>", "Register a cluster", 1, func(s []string) error {
		if webURL == "" && brokerURL == "" && webURLTLS == "" && brokerURLTLS == "" {
			return errors.New("give at least --url or --broker-url")
		}
		return a.write("PUT", "/admin/v2/clusters/"+url.PathEscape(s[0]), body())
	})
	update := leaf("update <cluster>", "Replace a cluster's configuration", 1, func(s []string) error {
		return a.write("POST", "/admin/v2/clusters/"+url.PathEscape(s[0]), body())
	})
	for _, c := range []*cobra.Command{create, update} {
		f := c.Flags()
		f.StringVar(&webURL, "url", "", "admin service URL (http://host:8080)")
		f.StringVar(&webURLTLS, "url-secure", "", "admin service TLS URL (https://host:8443)")
		f.StringVar(&brokerURL, "broker-url", "", "broker service URL replicators connect to (pulsar://host:6650)")
		f.StringVar(&brokerURLTLS, "broker-url-secure", "", "broker service TLS URL (pulsar+ssl://host:6651)")
		f.StringVar(&authPlugin, "auth-plugin", "", "authentication plugin replicators use towards it (token)")
		f.StringVar(&authParams, "auth-parameters", "", "authentication parameters (token:XYZ)")
		f.StringVar(&peers, "peer-clusters", "", "comma-separated peer clusters")
	}
	var peerList string
	updPeers := leaf("update-peer-clusters <cluster>", "Set a cluster's peer clusters", 1, func(s []string) error {
		return a.write("POST", "/admin/v2/clusters/"+url.PathEscape(s[0])+"/peers", splitList(peerList))
	})
	updPeers.Flags().StringVar(&peerList, "peer-clusters", "", "comma-separated peer clusters (empty: none)")
	return noun("clusters", "Clusters of the instance (shared configuration store)",
		leaf("list", "List clusters", 0, func([]string) error { return a.get("/admin/v2/clusters", "CLUSTER") }),
		leaf("get <cluster>", "Get a cluster's configuration", 1, func(s []string) error {
			return a.get("/admin/v2/clusters/"+url.PathEscape(s[0]), "")
		}),
		create, update,
		leaf("delete <cluster>", "Remove a cluster (no namespace may replicate to it)", 1, func(s []string) error {
			return a.write("DELETE", "/admin/v2/clusters/"+url.PathEscape(s[0]), nil)
		}),
		leaf("get-peer-clusters <cluster>", "Get a cluster's peer clusters", 1, func(s []string) error {
			return a.get("/admin/v2/clusters/"+url.PathEscape(s[0])+"/peers", "CLUSTER")
		}),
		updPeers)
}

func nsSetClustersCmd(a *adminCLI, nsCmd func(string, string, func(string, []string) error) *cobra.Command) *cobra.Command {
	var clusters string
	c := nsCmd("set-clusters <tenant/namespace>", "Set the replication clusters", func(p string, _ []string) error {
		list := splitList(clusters)
		if len(list) == 0 {
			return errors.New("--clusters is required")
		}
		return a.write("POST", p+"/replication", list)
	})
	c.Flags().StringVarP(&clusters, "clusters", "c", "", "comma-separated replication clusters")
	return c
}

func topicReplicationCmds(a *adminCLI) []*cobra.Command {
	var clusters string
	set := topicCmd("set-replication-clusters <topic>", "Override the replication clusters of a topic", 1, func(p string, _ []string) error {
		list := splitList(clusters)
		if len(list) == 0 {
			return errors.New("--clusters is required")
		}
		return a.write("POST", p+"/replication", list)
	})
	set.Flags().StringVarP(&clusters, "clusters", "c", "", "comma-separated replication clusters")
	var applied bool
	get := topicCmd("get-replication-clusters <topic>", "Get a topic's replication clusters override", 1, func(p string, _ []string) error {
		p += "/replication"
		if applied {
			p += "?applied=true"
		}
		return a.get(p, "CLUSTER")
	})
	get.Flags().BoolVar(&applied, "applied", false, "the effective list (the namespace's when not overridden)")
	return []*cobra.Command{set, get,
		topicCmd("remove-replication-clusters <topic>", "Remove a topic's replication clusters override", 1, func(p string, _ []string) error {
			return a.write("DELETE", p+"/replication", nil)
		}),
	}
}
