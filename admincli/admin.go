package admincli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

// adminCLI is the state every verb shares: the base URL, the output
// format, where output goes and the HTTP client (with credentials).
type adminCLI struct {
	url    string
	output string
	out    io.Writer
	client *http.Client
}

// NewCommand builds `magnetar admin` and its nouns and verbs, all
// sharing one adminCLI that the persistent flags fill.
func NewCommand() *cobra.Command {
	a := &adminCLI{out: os.Stdout}
	admin := &cobra.Command{
		Use:   "admin",
		Short: "Administer a Magnetar (or Pulsar) cluster through its admin REST API, like pulsar-admin",
	}
	pf := admin.PersistentFlags()
	pf.StringVar(&a.url, "admin-url", "http://localhost:8080", "admin REST API base URL")
	pf.StringVarP(&a.output, "output", "o", "table", "output format: table or json")
	ns, topics := adminNamespacesCmd(a), adminTopicsCmd(a)
	ns.AddCommand(namespacePolicyCmds(a)...)
	topics.AddCommand(topicPolicyCmds(a)...)
	admin.AddCommand(adminClustersCmd(a), adminBrokersCmd(a), adminBookiesCmd(a), adminTenantsCmd(a),
		ns, topics, adminSubscriptionsCmd(a), adminTransactionsCmd(a), noun("topicPolicies", "Topic-level policies (as under topics)", topicPolicyCmds(a)...))
	addClusterVerbs(a, admin)
	admin.AddCommand(adminFnCmd(a, "functions"), adminFnCmd(a, "sources"), adminFnCmd(a, "sinks"))
	admin.AddCommand(adminSchemasCmd(a))
	ns.AddCommand(namespaceMessagingCmds(a)...)
	topics.AddCommand(topicCompactionCmds(a)...)
	addAdminSecurity(a, admin)
	ns.AddCommand(nsPermissionCmds(a)...)
	topics.AddCommand(topicPermissionCmds(a)...)
	return admin
}

// adminError is a non-2xx answer, carrying Pulsar's {"reason"}.
type adminError struct {
	status int
	reason string
}

func (e *adminError) Error() string {
	return fmt.Sprintf("%d %s: %s", e.status, http.StatusText(e.status), e.reason)
}

// do sends one request and returns the body of a 2xx answer.
func (a *adminCLI) do(method, path string, body any) ([]byte, http.Header, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, strings.TrimRight(a.url, "/")+path, rd)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	c := a.client
	if c == nil {
		c = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Reason string `json:"reason"`
		}
		if json.Unmarshal(data, &e) != nil || e.Reason == "" {
			e.Reason = strings.TrimSpace(string(data))
		}
		return nil, nil, &adminError{status: resp.StatusCode, reason: e.Reason}
	}
	return data, resp.Header, nil
}

// show prints a JSON answer as a table (or raw JSON with -o json).
// header names the column of a list of strings.
func (a *adminCLI) show(data []byte, header string) error {
	if a.output == "json" {
		var buf bytes.Buffer
		if len(bytes.TrimSpace(data)) == 0 {
			data = []byte("null")
		}
		if err := json.Indent(&buf, data, "", "  "); err != nil {
			return err
		}
		buf.WriteByte('\n')
		_, err := a.out.Write(buf.Bytes())
		return err
	}
	if a.output != "table" {
		return fmt.Errorf("unknown output format %q (table or json)", a.output)
	}
	var v any
	if len(bytes.TrimSpace(data)) > 0 {
		if err := json.Unmarshal(data, &v); err != nil {
			return err
		}
	}
	tw := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
	switch x := v.(type) {
	case []any:
		if header == "" {
			header = "NAME"
		}
		fmt.Fprintln(tw, header)
		for _, e := range x {
			fmt.Fprintln(tw, scalar(e))
		}
	case map[string]any:
		fmt.Fprintln(tw, "KEY\tVALUE")
		rows := map[string]string{}
		flatten("", x, rows)
		keys := make([]string, 0, len(rows))
		for k := range rows {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(tw, "%s\t%s\n", k, rows[k])
		}
	case nil:
		fmt.Fprintln(tw, "(none)")
	default:
		fmt.Fprintln(tw, scalar(x))
	}
	return tw.Flush()
}

func scalar(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case nil:
		return "-"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// flatten turns nested objects into dotted keys; arrays of scalars are
// joined with commas, other arrays indexed.
func flatten(prefix string, v any, out map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 && prefix != "" {
			out[prefix] = "{}"
		}
		for k, e := range x {
			key := k
			if prefix != "" {
				key = prefix + "." + k
			}
			flatten(key, e, out)
		}
	case []any:
		simple := true
		for _, e := range x {
			switch e.(type) {
			case map[string]any, []any:
				simple = false
			}
		}
		if simple {
			parts := make([]string, len(x))
			for i, e := range x {
				parts[i] = scalar(e)
			}
			out[prefix] = strings.Join(parts, ",")
			return
		}
		for i, e := range x {
			flatten(prefix+"."+strconv.Itoa(i), e, out)
		}
	default:
		out[prefix] = scalar(x)
	}
}

// run wraps a REST call that prints its answer.
func (a *adminCLI) get(path, header string) error {
	data, _, err := a.do("GET", path, nil)
	if err != nil {
		return err
	}
	return a.show(data, header)
}

// write runs a mutating call and prints its JSON answer, if any.
func (a *adminCLI) write(method, path string, body any) error {
	data, _, err := a.do(method, path, body)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(data)) > 0 {
		return a.show(data, "")
	}
	return nil
}

func leaf(use, short string, nargs int, run func(args []string) error) *cobra.Command {
	return &cobra.Command{Use: use, Short: short, Args: cobra.ExactArgs(nargs),
		RunE: func(_ *cobra.Command, args []string) error { return run(args) }}
}

func noun(use, short string, cmds ...*cobra.Command) *cobra.Command {
	c := &cobra.Command{Use: use, Short: short}
	c.AddCommand(cmds...)
	return c
}

func adminBrokersCmd(a *adminCLI) *cobra.Command {
	return noun("brokers", "Brokers",
		leaf("list <cluster>", "List the active brokers of a cluster", 1, func(s []string) error {
			return a.get("/admin/v2/brokers/"+url.PathEscape(s[0]), "BROKER")
		}),
		leaf("healthcheck", "Check the broker's health", 0, func([]string) error {
			data, _, err := a.do("GET", "/admin/v2/brokers/health", nil)
			if err == nil {
				fmt.Fprintln(a.out, strings.TrimSpace(string(data)))
			}
			return err
		}))
}

func adminBookiesCmd(a *adminCLI) *cobra.Command {
	return noun("bookies", "Bookies",
		leaf("list", "List bookies and whether they are writable", 0, func([]string) error {
			data, _, err := a.do("GET", "/admin/v2/bookies/all", nil)
			if err != nil {
				return err
			}
			if a.output == "json" {
				return a.show(data, "")
			}
			var r struct {
				Bookies []struct {
					BookieID string `json:"bookieId"`
					State    string `json:"state"`
				} `json:"bookies"`
			}
			if err := json.Unmarshal(data, &r); err != nil {
				return err
			}
			tw := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "BOOKIE\tSTATE")
			for _, b := range r.Bookies {
				fmt.Fprintf(tw, "%s\t%s\n", b.BookieID, b.State)
			}
			return tw.Flush()
		}))
}

func splitList(s string) []string {
	out := []string{}
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func adminTenantsCmd(a *adminCLI) *cobra.Command {
	var roles, clusters string
	tenantBody := func() map[string]any {
		return map[string]any{"adminRoles": splitList(roles), "allowedClusters": splitList(clusters)}
	}
	create := leaf("create <tenant>", "Create a tenant", 1, func(s []string) error {
		return a.write("PUT", "/admin/v2/tenants/"+url.PathEscape(s[0]), tenantBody())
	})
	update := leaf("update <tenant>", "Update a tenant", 1, func(s []string) error {
		return a.write("POST", "/admin/v2/tenants/"+url.PathEscape(s[0]), tenantBody())
	})
	for _, c := range []*cobra.Command{create, update} {
		c.Flags().StringVarP(&roles, "admin-roles", "r", "", "comma-separated admin roles")
		c.Flags().StringVarP(&clusters, "allowed-clusters", "c", "standalone", "comma-separated allowed clusters")
	}
	return noun("tenants", "Tenants",
		leaf("list", "List tenants", 0, func([]string) error { return a.get("/admin/v2/tenants", "TENANT") }),
		leaf("get <tenant>", "Get a tenant", 1, func(s []string) error { return a.get("/admin/v2/tenants/"+url.PathEscape(s[0]), "") }),
		create, update,
		leaf("delete <tenant>", "Delete a tenant (it must have no namespaces)", 1, func(s []string) error {
			return a.write("DELETE", "/admin/v2/tenants/"+url.PathEscape(s[0]), nil)
		}))
}

// nsPath checks "tenant/namespace" and returns its REST path part.
func nsPath(ns string) (string, error) {
	t, n, ok := strings.Cut(ns, "/")
	if !ok || t == "" || n == "" || strings.Contains(n, "/") {
		return "", fmt.Errorf("namespace must be tenant/namespace, got %q", ns)
	}
	return url.PathEscape(t) + "/" + url.PathEscape(n), nil
}

// parseSize accepts bytes with an optional K/M/G/T suffix; -1 is unlimited.
func parseSize(s string) (int64, error) {
	if s == "-1" {
		return -1, nil
	}
	mult := int64(1)
	switch u := strings.ToUpper(s); {
	case strings.HasSuffix(u, "K"):
		mult, s = 1<<10, s[:len(s)-1]
	case strings.HasSuffix(u, "M"):
		mult, s = 1<<20, s[:len(s)-1]
	case strings.HasSuffix(u, "G"):
		mult, s = 1<<30, s[:len(s)-1]
	case strings.HasSuffix(u, "T"):
		mult, s = 1<<40, s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return n * mult, nil
}

// parseMinutes accepts a Go duration, a number with s/m/h/d/w suffix
// (minutes without suffix), or -1.
func parseMinutes(s string) (int, error) {
	if s == "-1" {
		return -1, nil
	}
	if n, err := strconv.Atoi(s); err == nil {
		return n, nil
	}
	if strings.HasSuffix(s, "d") || strings.HasSuffix(s, "w") {
		n, err := strconv.Atoi(s[:len(s)-1])
		if err != nil {
			return 0, fmt.Errorf("bad time %q", s)
		}
		if strings.HasSuffix(s, "w") {
			return n * 7 * 24 * 60, nil
		}
		return n * 24 * 60, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("bad time %q", s)
	}
	return int(d / time.Minute), nil
}

func adminNamespacesCmd(a *adminCLI) *cobra.Command {
	nsCmd := func(use, short string, run func(p string, args []string) error) *cobra.Command {
		return &cobra.Command{Use: use, Short: short, Args: cobra.MinimumNArgs(1), RunE: func(_ *cobra.Command, args []string) error {
			p, err := nsPath(args[0])
			if err != nil {
				return err
			}
			return run("/admin/v2/namespaces/"+p, args[1:])
		}}
	}
	var force bool
	del := nsCmd("delete <tenant/namespace>", "Delete a namespace", func(p string, _ []string) error {
		if force {
			p += "?force=true"
		}
		return a.write("DELETE", p, nil)
	})
	del.Flags().BoolVarP(&force, "force", "f", false, "delete its topics too")

	var retTime, retSize string
	setRet := nsCmd("set-retention <tenant/namespace>", "Set the retention policy", func(p string, _ []string) error {
		mins, err := parseMinutes(retTime)
		if err != nil {
			return err
		}
		size, err := parseSize(retSize)
		if err != nil {
			return err
		}
		if size > 0 {
			size = (size + (1<<20 - 1)) >> 20
		}
		return a.write("POST", p+"/retention", map[string]any{"retentionTimeInMinutes": mins, "retentionSizeInMB": size})
	})
	setRet.Flags().StringVar(&retTime, "time", "0", "retention time (e.g. 60m, 3h, 2d, -1 for infinite)")
	setRet.Flags().StringVar(&retSize, "size", "0", "retention size (e.g. 100M, 1G, -1 for infinite)")

	var ttl int
	setTTL := nsCmd("set-message-ttl <tenant/namespace>", "Set the message TTL in seconds", func(p string, _ []string) error {
		return a.write("POST", p+"/messageTTL", ttl)
	})
	setTTL.Flags().IntVarP(&ttl, "messageTTL", "t", 0, "message TTL in seconds")

	var limitSize, policy string
	var limitTime int64
	setQuota := nsCmd("set-backlog-quota <tenant/namespace>", "Set the backlog quota", func(p string, _ []string) error {
		size, err := parseSize(limitSize)
		if err != nil {
			return err
		}
		return a.write("POST", p+"/backlogQuota?backlogQuotaType=destination_storage",
			map[string]any{"limitSize": size, "limitTime": limitTime, "policy": policy})
	})
	setQuota.Flags().StringVarP(&limitSize, "limit", "l", "-1", "backlog size limit (e.g. 10M)")
	setQuota.Flags().Int64Var(&limitTime, "limitTime", -1, "backlog age limit in seconds")
	setQuota.Flags().StringVarP(&policy, "policy", "p", "producer_request_hold", "producer_request_hold, producer_exception or consumer_backlog_eviction")

	var enable, disable bool
	setDedup := nsCmd("set-deduplication <tenant/namespace>", "Enable or disable deduplication", func(p string, _ []string) error {
		if enable == disable {
			return fmt.Errorf("give exactly one of --enable or --disable")
		}
		return a.write("POST", p+"/deduplication", enable)
	})
	setDedup.Flags().BoolVarP(&enable, "enable", "e", false, "enable")
	setDedup.Flags().BoolVarP(&disable, "disable", "d", false, "disable")

	var maxN int
	setMaxP := nsCmd("set-max-producers-per-topic <tenant/namespace>", "Set the producers limit per topic", func(p string, _ []string) error {
		return a.write("POST", p+"/maxProducersPerTopic", maxN)
	})
	setMaxC := nsCmd("set-max-consumers-per-topic <tenant/namespace>", "Set the consumers limit per topic", func(p string, _ []string) error {
		return a.write("POST", p+"/maxConsumersPerTopic", maxN)
	})
	setMaxP.Flags().IntVar(&maxN, "max-producers-per-topic", 0, "limit (0: unlimited)")
	setMaxC.Flags().IntVar(&maxN, "max-consumers-per-topic", 0, "limit (0: unlimited)")
	setUnackC := nsCmd("set-max-unacked-messages-per-consumer <tenant/namespace>", "Set the unacked messages limit per Shared/Key_Shared consumer", func(p string, _ []string) error {
		return a.write("POST", p+"/maxUnackedMessagesPerConsumer", maxN)
	})
	setUnackS := nsCmd("set-max-unacked-messages-per-subscription <tenant/namespace>", "Set the unacked messages limit per Shared/Key_Shared subscription", func(p string, _ []string) error {
		return a.write("POST", p+"/maxUnackedMessagesPerSubscription", maxN)
	})
	setUnackC.Flags().IntVarP(&maxN, "max-unacked-messages-per-consumer", "c", 0, "limit (0: unlimited)")
	setUnackS.Flags().IntVarP(&maxN, "max-unacked-messages-per-subscription", "c", 0, "limit (0: unlimited)")

	var autoEnable, autoDisable bool
	var autoType string
	var autoParts int
	setAuto := nsCmd("set-auto-topic-creation <tenant/namespace>", "Override automatic topic creation", func(p string, _ []string) error {
		if autoEnable == autoDisable {
			return fmt.Errorf("give exactly one of --enable or --disable")
		}
		body := map[string]any{"allowAutoTopicCreation": autoEnable, "topicType": autoType}
		if autoType == "partitioned" {
			body["defaultNumPartitions"] = autoParts
		}
		return a.write("POST", p+"/autoTopicCreation", body)
	})
	setAuto.Flags().BoolVarP(&autoEnable, "enable", "e", false, "allow auto creation")
	setAuto.Flags().BoolVarP(&autoDisable, "disable", "d", false, "disallow auto creation")
	setAuto.Flags().StringVarP(&autoType, "type", "t", "non-partitioned", "partitioned or non-partitioned")
	setAuto.Flags().IntVarP(&autoParts, "num-partitions", "n", 1, "default partitions for partitioned auto creation")

	getter := func(use, short, suffix string) *cobra.Command {
		return nsCmd(use+" <tenant/namespace>", short, func(p string, _ []string) error { return a.get(p+suffix, "") })
	}
	remover := func(use, short, suffix string) *cobra.Command {
		return nsCmd(use+" <tenant/namespace>", short, func(p string, _ []string) error { return a.write("DELETE", p+suffix, nil) })
	}
	cmds := []*cobra.Command{
		leaf("list <tenant>", "List the namespaces of a tenant", 1, func(s []string) error {
			return a.get("/admin/v2/namespaces/"+url.PathEscape(s[0]), "NAMESPACE")
		}),
		nsCmd("topics <tenant/namespace>", "List the topics of a namespace", func(p string, _ []string) error { return a.get(p+"/topics", "TOPIC") }),
		nsCmd("create <tenant/namespace>", "Create a namespace", func(p string, _ []string) error { return a.write("PUT", p, nil) }),
		del,
		getter("policies", "Get the policies", ""),
		setRet, getter("get-retention", "Get the retention policy", "/retention"), remover("remove-retention", "Remove the retention policy", "/retention"),
		setTTL, getter("get-message-ttl", "Get the message TTL", "/messageTTL"), remover("remove-message-ttl", "Remove the message TTL", "/messageTTL"),
		setQuota, getter("get-backlog-quotas", "Get the backlog quotas", "/backlogQuotaMap"),
		remover("remove-backlog-quota", "Remove the backlog quota", "/backlogQuota?backlogQuotaType=destination_storage"),
		setDedup,
		setMaxP, getter("get-max-producers-per-topic", "Get the producers limit", "/maxProducersPerTopic"),
		setMaxC, getter("get-max-consumers-per-topic", "Get the consumers limit", "/maxConsumersPerTopic"),
		setUnackC, getter("get-max-unacked-messages-per-consumer", "Get the unacked messages limit per consumer", "/maxUnackedMessagesPerConsumer"),
		remover("remove-max-unacked-messages-per-consumer", "Remove the unacked messages limit per consumer", "/maxUnackedMessagesPerConsumer"),
		setUnackS, getter("get-max-unacked-messages-per-subscription", "Get the unacked messages limit per subscription", "/maxUnackedMessagesPerSubscription"),
		remover("remove-max-unacked-messages-per-subscription", "Remove the unacked messages limit per subscription", "/maxUnackedMessagesPerSubscription"),
		setAuto, getter("get-auto-topic-creation", "Get the auto topic creation override", "/autoTopicCreation"),
		remover("remove-auto-topic-creation", "Remove the auto topic creation override", "/autoTopicCreation"),
		nsSetClustersCmd(a, nsCmd), getter("get-clusters", "Get the replication clusters", "/replication"),
	}
	cmds = append(cmds, adminNamespacePolicyCmds(a, nsCmd)...)
	return noun("namespaces", "Namespaces and their policies", append(cmds, adminNamespaceOffloadCmds(a, nsCmd)...)...)
}

// topicPath canonicalises a topic name as pulsar-admin does ("t" is
// persistent://public/default/t, "a/b/t" is persistent://a/b/t) and
// returns its REST path part "domain/tenant/ns/topic".
func topicPath(name string) (string, error) {
	domain := "persistent"
	rest := name
	if d, r, ok := strings.Cut(name, "://"); ok {
		if d != "persistent" && d != "non-persistent" {
			return "", fmt.Errorf("unknown topic domain %q", d)
		}
		domain, rest = d, r
	}
	parts := strings.Split(rest, "/")
	switch len(parts) {
	case 1:
		parts = []string{"public", "default", parts[0]}
	case 3:
	default:
		return "", fmt.Errorf("topic must be <topic>, <tenant>/<namespace>/<topic> or <domain>://<tenant>/<namespace>/<topic>: %q", name)
	}
	for _, p := range parts {
		if p == "" {
			return "", fmt.Errorf("bad topic name %q", name)
		}
	}
	return domain + "/" + url.PathEscape(parts[0]) + "/" + url.PathEscape(parts[1]) + "/" + url.PathEscape(parts[2]), nil
}

// messageIDBody parses "ledger:entry" (or "earliest"/"latest") into the
// REST MessageId body.
func messageIDBody(s string) (map[string]any, error) {
	switch s {
	case "earliest":
		return map[string]any{"ledgerId": -1, "entryId": -1, "partitionIndex": -1}, nil
	case "latest", "":
		return map[string]any{"ledgerId": int64(1<<63 - 1), "entryId": int64(1<<63 - 1), "partitionIndex": -1}, nil
	}
	l, e, ok := strings.Cut(s, ":")
	li, err1 := strconv.ParseInt(l, 10, 64)
	ei, err2 := strconv.ParseInt(e, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return nil, fmt.Errorf("message id must be ledger:entry, earliest or latest; got %q", s)
	}
	return map[string]any{"ledgerId": li, "entryId": ei, "partitionIndex": -1}, nil
}

func topicCmd(use, short string, nargs int, run func(p string, args []string) error) *cobra.Command {
	return &cobra.Command{Use: use, Short: short, Args: cobra.ExactArgs(nargs), RunE: func(_ *cobra.Command, args []string) error {
		p, err := topicPath(args[0])
		if err != nil {
			return err
		}
		return run("/admin/v2/"+p, args[1:])
	}}
}

// printMessage prints a raw message answer (peek / get-by-id).
func (a *adminCLI) printMessage(data []byte, h http.Header) {
	if a.output == "json" {
		props := map[string]string{}
		if p := h.Get("X-Pulsar-Property"); p != "" {
			_ = json.Unmarshal([]byte(p), &props)
		}
		b, _ := json.MarshalIndent(map[string]any{
			"messageId": h.Get("X-Pulsar-Message-Id"), "publishTime": h.Get("X-Pulsar-Publish-Time"),
			"batchSize": h.Get("X-Pulsar-Num-Batch-Message"), "properties": props, "payload": string(data),
		}, "", "  ")
		fmt.Fprintln(a.out, string(b))
		return
	}
	tw := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "Message ID:\t%s\n", h.Get("X-Pulsar-Message-Id"))
	fmt.Fprintf(tw, "Publish time:\t%s\n", h.Get("X-Pulsar-Publish-Time"))
	if n := h.Get("X-Pulsar-Num-Batch-Message"); n != "" {
		fmt.Fprintf(tw, "Batch size:\t%s\n", n)
	}
	if p := h.Get("X-Pulsar-Property"); p != "" {
		fmt.Fprintf(tw, "Properties:\t%s\n", p)
	}
	fmt.Fprintf(tw, "Payload:\t%q\n", data)
	tw.Flush()
}

func adminTopicsCmd(a *adminCLI) *cobra.Command {
	var partitions int
	var meta []string // key=value topic properties
	create := topicCmd("create <topic>", "Create a non-partitioned topic", 1, func(p string, _ []string) error {
		m, err := parseProperties(meta)
		switch {
		case err != nil:
			return err
		case len(m) == 0:
			return a.write("PUT", p, nil)
		}
		return a.write("PUT", p, m)
	})
	createPart := topicCmd("create-partitioned-topic <topic>", "Create a partitioned topic", 1, func(p string, _ []string) error {
		m, err := parseProperties(meta)
		switch {
		case err != nil:
			return err
		case len(m) == 0:
			return a.write("PUT", p+"/partitions", partitions)
		}
		return a.write("PUT", p+"/partitions", map[string]any{"partitions": partitions, "properties": m})
	})
	for _, c := range []*cobra.Command{create, createPart} {
		c.Flags().StringArrayVarP(&meta, "metadata", "m", nil, "topic property key=value (repeatable)")
	}
	updatePart := topicCmd("update-partitioned-topic <topic>", "Grow a partitioned topic", 1, func(p string, _ []string) error {
		return a.write("POST", p+"/partitions", partitions)
	})
	for _, c := range []*cobra.Command{createPart, updatePart} {
		c.Flags().IntVarP(&partitions, "partitions", "p", 0, "number of partitions")
	}
	var force bool
	del := topicCmd("delete <topic>", "Delete a topic", 1, func(p string, _ []string) error {
		if force {
			p += "?force=true"
		}
		return a.write("DELETE", p, nil)
	})
	delPart := topicCmd("delete-partitioned-topic <topic>", "Delete a partitioned topic and its partitions", 1, func(p string, _ []string) error {
		return a.write("DELETE", p+"/partitions?force=true", nil)
	})
	del.Flags().BoolVarP(&force, "force", "f", false, "disconnect producers and consumers")
	var ledger, entry int64
	byID := topicCmd("get-message-by-id <topic>", "Get a message by ledger and entry id", 1, func(p string, _ []string) error {
		data, h, err := a.do("GET", fmt.Sprintf("%s/ledger/%d/entry/%d", p, ledger, entry), nil)
		if err != nil {
			return err
		}
		a.printMessage(data, h)
		return nil
	})
	byID.Flags().Int64VarP(&ledger, "ledger-id", "l", 0, "ledger id")
	byID.Flags().Int64VarP(&entry, "entry-id", "e", 0, "entry id")
	var index int64
	byIndex := topicCmd("get-message-id-by-index <topic>", "Get the id of the entry holding the message with a broker entry metadata index", 1, func(p string, _ []string) error {
		return a.get(fmt.Sprintf("%s/getMessageIdByIndex?index=%d", p, index), "")
	})
	byIndex.Flags().Int64VarP(&index, "index", "i", 0, "message index (broker entry metadata)")
	_ = byIndex.MarkFlagRequired("index")
	var sub string
	var count int
	peek := topicCmd("peek-messages <topic>", "Peek at the backlog of a subscription", 1, func(p string, _ []string) error {
		for i := 1; i <= count; i++ {
			data, h, err := a.do("GET", fmt.Sprintf("%s/subscription/%s/position/%d", p, url.PathEscape(sub), i), nil)
			if err != nil {
				return err
			}
			a.printMessage(data, h)
		}
		return nil
	})
	peek.Flags().StringVarP(&sub, "subscription", "s", "", "subscription (required, as in pulsar-admin)")
	_ = peek.MarkFlagRequired("subscription")
	peek.Flags().IntVarP(&count, "count", "n", 1, "number of messages")
	getter := func(use, short, suffix string) *cobra.Command {
		return topicCmd(use+" <topic>", short, 1, func(p string, _ []string) error { return a.get(p+suffix, "") })
	}
	cmds := []*cobra.Command{
		leaf("list <tenant/namespace>", "List the topics of a namespace (partitions included)", 1, func(s []string) error {
			p, err := nsPath(s[0])
			if err != nil {
				return err
			}
			return a.get("/admin/v2/persistent/"+p, "TOPIC")
		}),
		leaf("list-partitioned-topics <tenant/namespace>", "List the partitioned topics of a namespace", 1, func(s []string) error {
			p, err := nsPath(s[0])
			if err != nil {
				return err
			}
			return a.get("/admin/v2/persistent/"+p+"/partitioned", "TOPIC")
		}),
		create, createPart, updatePart, del, delPart,
		getter("get-partitioned-topic-metadata", "Get the partition count", "/partitions"),
		watchable(a, getter("stats", "Get the topic's stats", "/stats")),
		watchable(a, getter("partitioned-stats", "Get a partitioned topic's stats", "/partitioned-stats?perPartition=true")),
		watchable(a, getter("stats-internal", "Get the topic's internal stats (ledgers, cursors)", "/internalStats")),
		getter("last-message-id", "Get the last message id", "/lastMessageId"),
		topicCmd("terminate <topic>", "Terminate a topic", 1, func(p string, _ []string) error { return a.write("POST", p+"/terminate", nil) }),
		topicCmd("unload <topic>", "Unload a topic", 1, func(p string, _ []string) error { return a.write("PUT", p+"/unload", nil) }),
		byID, byIndex, peek,
		getter("lookup", "Look up the topic's broker", ""),
	}
	// lookup uses the lookup path, not the admin one.
	cmds[len(cmds)-1] = &cobra.Command{Use: "lookup <topic>", Short: "Look up the topic's broker", Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			p, err := topicPath(args[0])
			if err != nil {
				return err
			}
			return a.get("/lookup/v2/topic/"+p, "")
		}}
	cmds = append(cmds, topicReplicationCmds(a)...)
	cmds = append(cmds, adminTopicPolicyCmds(a)...)
	return noun("topics", "Topics", append(cmds, adminTopicOffloadCmds(a)...)...)
}

func adminSubscriptionsCmd(a *adminCLI) *cobra.Command {
	subCmd := func(use, short string, nargs int, run func(p string, args []string) error) *cobra.Command {
		return topicCmd(use, short, nargs, func(p string, args []string) error {
			return run(p+"/subscription/"+url.PathEscape(args[0]), args[1:])
		})
	}
	var at string
	create := subCmd("create <topic> <subscription>", "Create a subscription", 2, func(p string, _ []string) error {
		body, err := messageIDBody(at)
		if err != nil {
			return err
		}
		return a.write("PUT", p, body)
	})
	create.Flags().StringVarP(&at, "messageId", "m", "latest", "start position: latest, earliest or ledger:entry")
	var force bool
	del := subCmd("delete <topic> <subscription>", "Delete a subscription", 2, func(p string, _ []string) error {
		if force {
			p += "?force=true"
		}
		return a.write("DELETE", p, nil)
	})
	del.Flags().BoolVarP(&force, "force", "f", false, "disconnect its consumers")
	var n int64
	skip := subCmd("skip <topic> <subscription>", "Skip messages", 2, func(p string, _ []string) error {
		return a.write("POST", fmt.Sprintf("%s/skip/%d", p, n), nil)
	})
	skip.Flags().Int64VarP(&n, "count", "n", 0, "number of messages to skip")
	var resetTime, resetID string
	reset := subCmd("reset-cursor <topic> <subscription>", "Reset the cursor to a time or a message id", 2, func(p string, _ []string) error {
		switch {
		case resetID != "":
			body, err := messageIDBody(resetID)
			if err != nil {
				return err
			}
			return a.write("POST", p+"/resetcursor", body)
		case resetTime != "":
			d, err := time.ParseDuration(resetTime)
			var ts int64
			if err == nil {
				ts = time.Now().Add(-d).UnixMilli()
			} else if ts, err = strconv.ParseInt(resetTime, 10, 64); err != nil {
				return fmt.Errorf("--time is a duration back from now (e.g. 10m) or a unix ms timestamp")
			}
			return a.write("POST", fmt.Sprintf("%s/resetcursor/%d", p, ts), nil)
		}
		return fmt.Errorf("give --time or --messageId")
	})
	reset.Flags().StringVarP(&resetTime, "time", "t", "", "duration back from now (e.g. 10m) or unix ms")
	reset.Flags().StringVarP(&resetID, "messageId", "m", "", "ledger:entry, earliest or latest")
	var expire int64
	exp := subCmd("expire-messages <topic> <subscription>", "Expire messages older than N seconds", 2, func(p string, _ []string) error {
		return a.write("POST", fmt.Sprintf("%s/expireMessages/%d", p, expire), nil)
	})
	exp.Flags().Int64VarP(&expire, "expireTime", "t", 0, "age in seconds")
	return noun("subscriptions", "Subscriptions of a topic",
		topicCmd("list <topic>", "List the subscriptions of a topic", 1, func(p string, _ []string) error {
			return a.get(p+"/subscriptions", "SUBSCRIPTION")
		}),
		create, del, skip,
		subCmd("clear-backlog <topic> <subscription>", "Skip all messages", 2, func(p string, _ []string) error {
			return a.write("POST", p+"/skip_all", nil)
		}),
		reset, exp)
}
