package admincli

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/spf13/cobra"
)

// adminNamespacePolicyCmds are pulsar-admin's namespace commands for
// persistence, anti-affinity, consumers per subscription, encryption and
// clear-backlog.
func adminNamespacePolicyCmds(a *adminCLI, nsCmd func(use, short string, run func(p string, args []string) error) *cobra.Command) []*cobra.Command {
	var ens, wq, aq int
	var mdr float64
	setPers := nsCmd("set-persistence <tenant/namespace>", "Set the persistence policies (E/Qw/Qa, mark-delete rate)", func(p string, _ []string) error {
		return a.write("POST", p+"/persistence", persistenceBody(ens, wq, aq, mdr))
	})
	persistenceFlags(setPers, &ens, &wq, &aq, &mdr)

	var group string
	setAA := nsCmd("set-anti-affinity-group <tenant/namespace>", "Set the anti-affinity group", func(p string, _ []string) error {
		if group == "" {
			return fmt.Errorf("--group is required")
		}
		return a.write("POST", p+"/antiAffinity", group)
	})
	setAA.Flags().StringVarP(&group, "group", "g", "", "anti-affinity group name")
	getAA := nsCmd("get-anti-affinity-group <tenant/namespace>", "Get the anti-affinity group", func(p string, _ []string) error {
		data, _, err := a.do("GET", p+"/antiAffinity", nil)
		if err == nil {
			fmt.Fprintln(a.out, strings.TrimSpace(string(data)))
		}
		return err
	})
	var cluster, tenant string
	listAA := leaf("get-anti-affinity-namespaces", "List the namespaces of an anti-affinity group", 0, func([]string) error {
		if cluster == "" || group == "" {
			return fmt.Errorf("--cluster and --group are required")
		}
		q := ""
		if tenant != "" {
			q = "?tenant=" + url.QueryEscape(tenant)
		}
		return a.get("/admin/v2/namespaces/"+url.PathEscape(cluster)+"/antiAffinity/"+url.PathEscape(group)+q, "NAMESPACE")
	})
	listAA.Flags().StringVarP(&cluster, "cluster", "c", "", "cluster")
	listAA.Flags().StringVarP(&group, "group", "g", "", "anti-affinity group name")
	listAA.Flags().StringVarP(&tenant, "tenant", "p", "", "tenant (default: all)")

	var maxN int
	setMaxCS := nsCmd("set-max-consumers-per-subscription <tenant/namespace>", "Set the consumers limit per subscription", func(p string, _ []string) error {
		return a.write("POST", p+"/maxConsumersPerSubscription", maxN)
	})
	setMaxCS.Flags().IntVarP(&maxN, "max-consumers-per-subscription", "c", 0, "limit (0: unlimited)")

	var enable, disable bool
	setEnc := nsCmd("set-encryption-required <tenant/namespace>", "Require (or not) encrypted messages", func(p string, _ []string) error {
		if enable == disable {
			return fmt.Errorf("give exactly one of --enable or --disable")
		}
		return a.write("POST", p+"/encryptionRequired", enable)
	})
	setEnc.Flags().BoolVarP(&enable, "enable", "e", false, "require encryption")
	setEnc.Flags().BoolVarP(&disable, "disable", "d", false, "do not require encryption")

	var sub, bundle string
	var force bool
	clear := nsCmd("clear-backlog <tenant/namespace>", "Skip every backlog of the namespace (or of a subscription / bundle) to its end", func(p string, _ []string) error {
		if !force {
			return fmt.Errorf("clearing backlogs drops unconsumed messages: confirm with --force")
		}
		if bundle != "" {
			p += "/" + url.PathEscape(bundle)
		}
		p += "/clearBacklog"
		if sub != "" {
			p += "/" + url.PathEscape(sub)
		}
		return a.write("POST", p, nil)
	})
	clear.Flags().StringVarP(&sub, "sub", "s", "", "only this subscription")
	clear.Flags().StringVarP(&bundle, "bundle", "b", "", "only this bundle ({start}_{end})")
	clear.Flags().BoolVar(&force, "force", false, "do not ask for confirmation")

	get := func(use, short, suffix string) *cobra.Command {
		return nsCmd(use+" <tenant/namespace>", short, func(p string, _ []string) error { return a.get(p+suffix, "") })
	}
	rm := func(use, short, suffix string) *cobra.Command {
		return nsCmd(use+" <tenant/namespace>", short, func(p string, _ []string) error { return a.write("DELETE", p+suffix, nil) })
	}
	return []*cobra.Command{
		setPers, get("get-persistence", "Get the persistence policies", "/persistence"), rm("remove-persistence", "Remove the persistence policies", "/persistence"),
		setAA, getAA, rm("delete-anti-affinity-group", "Remove the anti-affinity group", "/antiAffinity"), listAA,
		setMaxCS, get("get-max-consumers-per-subscription", "Get the consumers limit per subscription", "/maxConsumersPerSubscription"),
		rm("remove-max-consumers-per-subscription", "Remove the consumers limit per subscription", "/maxConsumersPerSubscription"),
		setEnc, get("get-encryption-required", "Get whether encryption is required", "/encryptionRequired"),
		clear,
	}
}

func persistenceFlags(c *cobra.Command, ens, wq, aq *int, mdr *float64) {
	c.Flags().IntVarP(ens, "bookkeeper-ensemble", "e", 0, "ensemble size E of new ledgers")
	c.Flags().IntVarP(wq, "bookkeeper-write-quorum", "w", 0, "write quorum Qw")
	c.Flags().IntVarP(aq, "bookkeeper-ack-quorum", "a", 0, "ack quorum Qa")
	c.Flags().Float64VarP(mdr, "ml-mark-delete-max-rate", "r", 0, "mark-delete persists per second per cursor (0: broker default)")
}

func persistenceBody(ens, wq, aq int, mdr float64) map[string]any {
	return map[string]any{"bookkeeperEnsemble": ens, "bookkeeperWriteQuorum": wq, "bookkeeperAckQuorum": aq, "managedLedgerMaxMarkDeleteRate": mdr}
}

// adminTopicPolicyCmds are the topic-level persistence and consumers per
// subscription commands and the topic properties commands.
func adminTopicPolicyCmds(a *adminCLI) []*cobra.Command {
	var ens, wq, aq int
	var mdr float64
	setPers := topicCmd("set-persistence <topic>", "Set the topic's persistence policies", 1, func(p string, _ []string) error {
		return a.write("POST", p+"/persistence", persistenceBody(ens, wq, aq, mdr))
	})
	persistenceFlags(setPers, &ens, &wq, &aq, &mdr)
	var maxN int
	setMaxCS := topicCmd("set-max-consumers-per-subscription <topic>", "Set the topic's consumers limit per subscription", 1, func(p string, _ []string) error {
		return a.write("POST", p+"/maxConsumersPerSubscription", maxN)
	})
	setMaxCS.Flags().IntVarP(&maxN, "max-consumers-per-subscription", "c", 0, "limit (0: unlimited)")
	var applied bool
	get := func(use, short, suffix string) *cobra.Command {
		c := topicCmd(use+" <topic>", short, 1, func(p string, _ []string) error {
			if applied {
				suffix += "?applied=true"
			}
			return a.get(p+suffix, "")
		})
		c.Flags().BoolVar(&applied, "applied", false, "the value in force (topic, namespace or broker default)")
		return c
	}
	rm := func(use, short, suffix string) *cobra.Command {
		return topicCmd(use+" <topic>", short, 1, func(p string, _ []string) error { return a.write("DELETE", p+suffix, nil) })
	}
	var props []string
	update := topicCmd("update-properties <topic>", "Add or change topic properties", 1, func(p string, _ []string) error {
		m, err := parseProperties(props)
		if err != nil {
			return err
		}
		if len(m) == 0 {
			return fmt.Errorf("give at least one --property key=value")
		}
		return a.write("PUT", p+"/properties", m)
	})
	update.Flags().StringArrayVarP(&props, "property", "p", nil, "key=value (repeatable)")
	var key string
	remove := topicCmd("remove-properties <topic>", "Remove a topic property", 1, func(p string, _ []string) error {
		if key == "" {
			return fmt.Errorf("--key is required")
		}
		return a.write("DELETE", p+"/properties?key="+url.QueryEscape(key), nil)
	})
	remove.Flags().StringVarP(&key, "key", "k", "", "property key")
	return []*cobra.Command{
		setPers, get("get-persistence", "Get the topic's persistence policies", "/persistence"), rm("remove-persistence", "Remove the topic's persistence policies", "/persistence"),
		setMaxCS, get("get-max-consumers-per-subscription", "Get the topic's consumers limit per subscription", "/maxConsumersPerSubscription"),
		rm("remove-max-consumers-per-subscription", "Remove the topic's consumers limit per subscription", "/maxConsumersPerSubscription"),
		topicCmd("get-properties <topic>", "Get the topic's properties", 1, func(p string, _ []string) error { return a.get(p+"/properties", "") }),
		update, remove,
	}
}

// parseProperties reads key=value flags.
func parseProperties(kvs []string) (map[string]string, error) {
	m := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("property %q is not key=value", kv)
		}
		m[k] = v
	}
	return m, nil
}
