package admincli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// `magnetar admin functions | sources | sinks`: pulsar-admin's commands
// for Pulsar Functions and Pulsar IO over /admin/v3.

// fnFlags are the flags of create/update and of the naming of one
// deployment.
type fnFlags struct {
	tenant, namespace, name, fqfn  string
	configFile                     string
	inputs, topicsPattern, output  string
	logTopic, dlq, subName, subPos string
	guarantees                     string
	parallelism, retries           int
	userConfig                     string
	goBin, archive, typ            string
	ram, disk                      int64
	cpu                            float64
	instance                       int
	key, state, triggerValue       string
	topic                          string
	updateAuthData                 bool
}

func (f *fnFlags) nameFlags(c *cobra.Command) {
	fl := c.Flags()
	fl.StringVar(&f.tenant, "tenant", "public", "tenant")
	fl.StringVar(&f.namespace, "namespace", "default", "namespace")
	fl.StringVar(&f.name, "name", "", "name")
	fl.StringVar(&f.fqfn, "fqfn", "", "tenant/namespace/name (instead of --tenant, --namespace and --name)")
}

func (f *fnFlags) path(kind string) (string, error) {
	t, ns, n := f.tenant, f.namespace, f.name
	if f.fqfn != "" {
		parts := strings.Split(f.fqfn, "/")
		if len(parts) != 3 {
			return "", fmt.Errorf("--fqfn %q: want tenant/namespace/name", f.fqfn)
		}
		t, ns, n = parts[0], parts[1], parts[2]
	}
	if n == "" {
		return "", fmt.Errorf("--name (or --fqfn) is required")
	}
	return "/admin/v3/" + kind + "/" + url.PathEscape(t) + "/" + url.PathEscape(ns) + "/" + url.PathEscape(n), nil
}

// config builds the configuration JSON from --*-config-file and the flags
// (flags win).
func (f *fnFlags) config(c *cobra.Command, kind string) (map[string]any, error) {
	cfg := map[string]any{}
	if f.configFile != "" {
		b, err := os.ReadFile(f.configFile)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &cfg); err != nil {
			return nil, fmt.Errorf("%s: %w", f.configFile, err)
		}
	}
	set := func(flag, key string, v any) {
		if c.Flags().Changed(flag) {
			cfg[key] = v
		}
	}
	if f.fqfn != "" {
		parts := strings.Split(f.fqfn, "/")
		if len(parts) == 3 {
			cfg["tenant"], cfg["namespace"], cfg["name"] = parts[0], parts[1], parts[2]
		}
	} else {
		cfg["tenant"], cfg["namespace"] = f.tenant, f.namespace
		if f.name != "" {
			cfg["name"] = f.name
		}
	}
	if c.Flags().Changed("inputs") {
		cfg["inputs"] = splitList(f.inputs)
	}
	set("topics-pattern", "topicsPattern", f.topicsPattern)
	set("processing-guarantees", "processingGuarantees", f.guarantees)
	set("parallelism", "parallelism", f.parallelism)
	set("dead-letter-topic", "deadLetterTopic", f.dlq)
	set("max-message-retries", "maxMessageRetries", f.retries)
	res := map[string]any{}
	if c.Flags().Changed("ram") {
		res["ram"] = f.ram
	}
	if c.Flags().Changed("cpu") {
		res["cpu"] = f.cpu
	}
	if c.Flags().Changed("disk") {
		res["disk"] = f.disk
	}
	if len(res) > 0 {
		cfg["resources"] = res
	}
	var uc map[string]any
	if f.userConfig != "" {
		if err := json.Unmarshal([]byte(f.userConfig), &uc); err != nil {
			return nil, fmt.Errorf("config JSON: %w", err)
		}
	}
	switch kind {
	case "functions":
		set("output", "output", f.output)
		set("log-topic", "logTopic", f.logTopic)
		set("subs-name", "subName", f.subName)
		set("subs-position", "subscriptionPosition", f.subPos)
		if uc != nil {
			cfg["userConfig"] = uc
		}
		if _, ok := cfg["runtime"]; !ok {
			cfg["runtime"] = "GO"
		}
	case "sources":
		set("destination-topic-name", "topicName", f.output)
		if uc != nil {
			cfg["configs"] = uc
		}
	case "sinks":
		set("subs-name", "sourceSubscriptionName", f.subName)
		set("subs-position", "sourceSubscriptionPosition", f.subPos)
		if uc != nil {
			cfg["configs"] = uc
		}
	}
	if f.typ != "" {
		cfg["archive"] = "builtin://" + f.typ
	}
	if f.archive != "" && !strings.HasPrefix(f.archive, "/") && strings.Contains(f.archive, "://") {
		cfg["archive"] = f.archive
	}
	return cfg, nil
}

// upload sends a create or update as multipart: the config part and the
// package file (--go for functions, a local --archive for connectors).
func (a *adminCLI) upload(method, path, kind string, cfg map[string]any, pkg string, updateAuthData bool) error {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	cj, _ := json.Marshal(cfg)
	part := map[string]string{"functions": "functionConfig", "sources": "sourceConfig", "sinks": "sinkConfig"}[kind]
	h := make(map[string][]string)
	h["Content-Disposition"] = []string{`form-data; name="` + part + `"`}
	h["Content-Type"] = []string{"application/json"}
	pw, err := mw.CreatePart(h)
	if err != nil {
		return err
	}
	pw.Write(cj)
	if updateAuthData {
		// Pulsar's UpdateOptions: the function's credentials become the
		// caller's.
		mw.WriteField("updateOptions", `{"updateAuthData":true}`)
	}
	if pkg != "" {
		f, err := os.Open(pkg)
		if err != nil {
			return err
		}
		defer f.Close()
		fw, err := mw.CreateFormFile("data", filepath.Base(pkg))
		if err != nil {
			return err
		}
		if _, err := io.Copy(fw, f); err != nil {
			return err
		}
	}
	mw.Close()
	return a.raw(method, path, mw.FormDataContentType(), &body)
}

// raw sends a request with a ready body and prints a non-empty answer.
func (a *adminCLI) raw(method, path, ct string, body io.Reader) error {
	req, err := http.NewRequest(method, strings.TrimRight(a.url, "/")+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", ct)
	resp, err := (&http.Client{Timeout: 5 * time.Minute}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		var e struct {
			Reason string `json:"reason"`
		}
		if json.Unmarshal(data, &e) != nil || e.Reason == "" {
			e.Reason = strings.TrimSpace(string(data))
		}
		return &adminError{status: resp.StatusCode, reason: e.Reason}
	}
	if len(bytes.TrimSpace(data)) > 0 {
		fmt.Fprintln(a.out, strings.TrimSpace(string(data)))
	}
	return nil
}

func adminFnCmd(a *adminCLI, kind string) *cobra.Command {
	short := map[string]string{"functions": "Pulsar Functions", "sources": "Pulsar IO sources", "sinks": "Pulsar IO sinks"}[kind]
	root := &cobra.Command{Use: kind, Short: short}
	mk := func(use, help string, run func(c *cobra.Command, f *fnFlags) error, extra func(c *cobra.Command, f *fnFlags)) {
		f := &fnFlags{instance: -1}
		c := &cobra.Command{Use: use, Short: help, Args: cobra.NoArgs,
			RunE: func(c *cobra.Command, _ []string) error { return run(c, f) }}
		f.nameFlags(c)
		if extra != nil {
			extra(c, f)
		}
		root.AddCommand(c)
	}
	deployFlags := func(c *cobra.Command, f *fnFlags) {
		fl := c.Flags()
		cfgName := map[string]string{"functions": "function-config-file", "sources": "source-config-file", "sinks": "sink-config-file"}[kind]
		fl.StringVar(&f.configFile, cfgName, "", "configuration JSON file (Pulsar's field names)")
		fl.StringVar(&f.guarantees, "processing-guarantees", "", "ATLEAST_ONCE, ATMOST_ONCE or EFFECTIVELY_ONCE")
		fl.IntVar(&f.parallelism, "parallelism", 1, "number of instances")
		fl.Float64Var(&f.cpu, "cpu", 0, "cores per instance (GOMAXPROCS)")
		fl.Int64Var(&f.ram, "ram", 0, "bytes of memory per instance (GOMEMLIMIT)")
		fl.Int64Var(&f.disk, "disk", 0, "largest file an instance may write, bytes")
		switch kind {
		case "functions":
			fl.StringVar(&f.inputs, "inputs", "", "input topics, comma-separated")
			fl.StringVar(&f.topicsPattern, "topics-pattern", "", "regular expression of input topics")
			fl.StringVar(&f.output, "output", "", "output topic")
			fl.StringVar(&f.logTopic, "log-topic", "", "topic for the function's log")
			fl.StringVar(&f.dlq, "dead-letter-topic", "", "topic for messages that failed maxMessageRetries times")
			fl.IntVar(&f.retries, "max-message-retries", 0, "redeliveries of a failing message")
			fl.StringVar(&f.subName, "subs-name", "", "subscription name (default tenant/namespace/name)")
			fl.StringVar(&f.subPos, "subs-position", "", "Latest or Earliest")
			fl.StringVar(&f.userConfig, "user-config", "", "userConfig as JSON")
			fl.StringVar(&f.goBin, "go", "", "the function's Go executable (built against functions/sdk) to upload")
		case "sources":
			fl.StringVar(&f.output, "destination-topic-name", "", "topic the source writes to")
			fl.StringVar(&f.typ, "source-type", "", "builtin connector: file or http")
			fl.StringVar(&f.archive, "archive", "", "builtin://NAME, or a local executable to upload")
			fl.StringVar(&f.userConfig, "source-config", "", "connector configs as JSON")
		case "sinks":
			fl.StringVar(&f.inputs, "inputs", "", "input topics, comma-separated")
			fl.StringVar(&f.topicsPattern, "topics-pattern", "", "regular expression of input topics")
			fl.StringVar(&f.typ, "sink-type", "", "builtin connector: file, log or jdbc-postgres")
			fl.StringVar(&f.archive, "archive", "", "builtin://NAME, or a local executable to upload")
			fl.StringVar(&f.userConfig, "sink-config", "", "connector configs as JSON")
			fl.StringVar(&f.dlq, "dead-letter-topic", "", "topic for messages that failed maxMessageRetries times")
			fl.IntVar(&f.retries, "max-message-retries", 0, "redeliveries of a failing message")
			fl.StringVar(&f.subName, "subs-name", "", "subscription name")
			fl.StringVar(&f.subPos, "subs-position", "", "Latest or Earliest")
		}
	}
	deploy := func(method string) func(c *cobra.Command, f *fnFlags) error {
		return func(c *cobra.Command, f *fnFlags) error {
			if f.name == "" && f.fqfn == "" && f.configFile == "" {
				return fmt.Errorf("--name (or --fqfn, or a config file with name) is required")
			}
			cfg, err := f.config(c, kind)
			if err != nil {
				return err
			}
			if f.name == "" && f.fqfn == "" {
				f.name, _ = cfg["name"].(string)
				if t, ok := cfg["tenant"].(string); ok {
					f.tenant = t
				}
				if ns, ok := cfg["namespace"].(string); ok {
					f.namespace = ns
				}
			}
			p, err := f.path(kind)
			if err != nil {
				return err
			}
			pkg := f.goBin
			if f.archive != "" && !strings.Contains(f.archive, "://") {
				pkg = f.archive
			}
			if err := a.upload(method, p, kind, cfg, pkg, f.updateAuthData); err != nil {
				return err
			}
			fmt.Fprintf(a.out, "%s %s\n", map[string]string{http.MethodPost: "Created", http.MethodPut: "Updated"}[method], strings.TrimPrefix(p, "/admin/v3/"))
			return nil
		}
	}
	mk("create", "Deploy (package uploaded from --go or --archive)", deploy(http.MethodPost), deployFlags)
	mk("update", "Update configuration and/or package in place", deploy(http.MethodPut), func(c *cobra.Command, f *fnFlags) {
		deployFlags(c, f)
		c.Flags().BoolVar(&f.updateAuthData, "update-auth-data", false, "the instances' credentials become this request's token (they keep the submitter's otherwise)")
	})
	simple := func(method, suffix string) func(c *cobra.Command, f *fnFlags) error {
		return func(c *cobra.Command, f *fnFlags) error {
			p, err := f.path(kind)
			if err != nil {
				return err
			}
			if f.instance >= 0 {
				p += fmt.Sprintf("/%d", f.instance)
			}
			p += suffix
			if method == http.MethodGet {
				data, _, err := a.do(method, p, nil)
				if err != nil {
					return err
				}
				var buf bytes.Buffer
				if json.Indent(&buf, data, "", "  ") != nil {
					buf.Reset()
					buf.Write(data)
				}
				fmt.Fprintln(a.out, strings.TrimSpace(buf.String()))
				return nil
			}
			if err := a.write(method, p, nil); err != nil {
				return err
			}
			if suffix != "" {
				fmt.Fprintf(a.out, "%s: %s\n", strings.TrimPrefix(suffix, "/"), strings.TrimPrefix(p, "/admin/v3/"))
			} else {
				fmt.Fprintf(a.out, "Deleted %s\n", strings.TrimPrefix(p, "/admin/v3/"))
			}
			return nil
		}
	}
	instFlag := func(c *cobra.Command, f *fnFlags) {
		c.Flags().IntVar(&f.instance, "instance-id", -1, "one instance (default all)")
	}
	mk("delete", "Delete", simple(http.MethodDelete, ""), nil)
	mk("get", "Show the configuration", simple(http.MethodGet, ""), nil)
	mk("status", "Show the status of all or one instance", simple(http.MethodGet, "/status"), instFlag)
	mk("stats", "Show the stats of all or one instance", simple(http.MethodGet, "/stats"), instFlag)
	for _, op := range []string{"start", "stop", "restart"} {
		mk(op, strings.ToUpper(op[:1])+op[1:]+" all or one instance", simple(http.MethodPost, "/"+op), instFlag)
	}
	list := &cobra.Command{Use: "list", Short: "List the names in a namespace", Args: cobra.NoArgs}
	lf := &fnFlags{}
	list.Flags().StringVar(&lf.tenant, "tenant", "public", "tenant")
	list.Flags().StringVar(&lf.namespace, "namespace", "default", "namespace")
	list.RunE = func(*cobra.Command, []string) error {
		return a.get("/admin/v3/"+kind+"/"+url.PathEscape(lf.tenant)+"/"+url.PathEscape(lf.namespace), "Name")
	}
	root.AddCommand(list)
	switch kind {
	case "functions":
		mk("trigger", "Publish a value to the input and print the output", func(c *cobra.Command, f *fnFlags) error {
			p, err := f.path(kind)
			if err != nil {
				return err
			}
			var body bytes.Buffer
			mw := multipart.NewWriter(&body)
			mw.WriteField("data", f.triggerValue)
			if f.topic != "" {
				mw.WriteField("topic", f.topic)
			}
			mw.Close()
			return a.raw(http.MethodPost, p+"/trigger", mw.FormDataContentType(), &body)
		}, func(c *cobra.Command, f *fnFlags) {
			c.Flags().StringVar(&f.triggerValue, "trigger-value", "", "the value to publish")
			c.Flags().StringVar(&f.topic, "topic", "", "input topic (default the first input)")
		})
		mk("querystate", "Show a state key", func(c *cobra.Command, f *fnFlags) error {
			p, err := f.path(kind)
			if err != nil {
				return err
			}
			if f.key == "" {
				return fmt.Errorf("--key is required")
			}
			return a.get(p+"/state/"+url.PathEscape(f.key), "")
		}, func(c *cobra.Command, f *fnFlags) { c.Flags().StringVarP(&f.key, "key", "k", "", "state key") })
		mk("putstate", "Set a state key (--state is FunctionState JSON)", func(c *cobra.Command, f *fnFlags) error {
			p, err := f.path(kind)
			if err != nil {
				return err
			}
			var st map[string]any
			if err := json.Unmarshal([]byte(f.state), &st); err != nil {
				return fmt.Errorf("--state: %w", err)
			}
			key, _ := st["key"].(string)
			if key == "" {
				return fmt.Errorf("--state needs a key")
			}
			return a.raw(http.MethodPost, p+"/state/"+url.PathEscape(key), "application/json", strings.NewReader(f.state))
		}, func(c *cobra.Command, f *fnFlags) {
			c.Flags().StringVarP(&f.state, "state", "s", "", `FunctionState JSON, e.g. {"key":"k","stringValue":"v"}`)
		})
	}
	return root
}
