package admincli

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

// The schema registry and the schema / compaction policies, as in
// pulsar-admin: `admin schemas ...`, `admin namespaces
// {get,set}-schema-compatibility-strategy ...`, `admin topics compact`.

// schemaPath is the /admin/v2/schemas path of a topic.
func schemaPath(topic string) (string, error) {
	p, err := topicPath(topic)
	if err != nil {
		return "", err
	}
	_, rest, _ := strings.Cut(p, "/")
	return "/admin/v2/schemas/" + rest, nil
}

func schemaCmd(use, short string, nargs int, run func(p string, args []string) error) *cobra.Command {
	return &cobra.Command{Use: use, Short: short, Args: cobra.ExactArgs(nargs), RunE: func(_ *cobra.Command, args []string) error {
		p, err := schemaPath(args[0])
		if err != nil {
			return err
		}
		return run(p, args[1:])
	}}
}

// readSchemaFile reads a PostSchemaPayload ({"type","schema","properties"})
// from a file, as pulsar-admin schemas upload -f does.
func readSchemaFile(path string) (map[string]any, error) {
	if path == "" {
		return nil, fmt.Errorf("--filename is required")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var body map[string]any
	if err := json.Unmarshal(b, &body); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if _, ok := body["type"].(string); !ok {
		return nil, fmt.Errorf(`%s: "type" (a string) is required`, path)
	}
	if s, ok := body["schema"]; ok {
		if _, isString := s.(string); !isString {
			// pulsar-admin accepts the definition as a JSON object too.
			js, _ := json.Marshal(s)
			body["schema"] = string(js)
		}
	}
	return body, nil
}

func adminSchemasCmd(a *adminCLI) *cobra.Command {
	var version int64
	var all bool
	var file string
	get := schemaCmd("get <topic>", "Show the latest schema, --version N, or --all-versions", 1, func(p string, _ []string) error {
		switch {
		case all:
			return a.get(p+"/schemas", "")
		case version >= 0:
			return a.get(p+"/schema/"+strconv.FormatInt(version, 10), "")
		}
		return a.get(p+"/schema", "")
	})
	get.Flags().Int64Var(&version, "version", -1, "schema version")
	get.Flags().BoolVarP(&all, "all-versions", "a", false, "every live version")
	upload := schemaCmd("upload <topic>", "Register a schema (-f payload file: {\"type\",\"schema\",\"properties\"})", 1, func(p string, _ []string) error {
		body, err := readSchemaFile(file)
		if err != nil {
			return err
		}
		return a.write("POST", p+"/schema", body)
	})
	upload.Flags().StringVarP(&file, "filename", "f", "", "schema payload file")
	test := schemaCmd("compatibility <topic>", "Test a schema against the topic's versions without registering it (-f payload file)", 1, func(p string, _ []string) error {
		body, err := readSchemaFile(file)
		if err != nil {
			return err
		}
		return a.write("POST", p+"/compatibility", body)
	})
	test.Flags().StringVarP(&file, "filename", "f", "", "schema payload file")
	del := schemaCmd("delete <topic>", "Delete the topic's schema (the next one starts a new history)", 1, func(p string, _ []string) error {
		return a.write("DELETE", p+"/schema", nil)
	})
	var applied bool
	getSt := topicCmd("get-compatibility-strategy <topic>", "Show the topic's compatibility strategy override (--applied: the one in effect)", 1, func(p string, _ []string) error {
		q := ""
		if applied {
			q = "?applied=true"
		}
		return a.get(p+"/schemaCompatibilityStrategy"+q, "")
	})
	getSt.Flags().BoolVar(&applied, "applied", false, "the strategy in effect (topic, namespace or broker)")
	setSt := topicCmd("set-compatibility-strategy <topic> <strategy>", "Override the topic's compatibility strategy (ALWAYS_COMPATIBLE, ALWAYS_INCOMPATIBLE, BACKWARD, FORWARD, FULL, *_TRANSITIVE)", 2, func(p string, args []string) error {
		return a.write("PUT", p+"/schemaCompatibilityStrategy", strings.ToUpper(args[0]))
	})
	rmSt := topicCmd("remove-compatibility-strategy <topic>", "Remove the topic's override", 1, func(p string, _ []string) error {
		return a.write("DELETE", p+"/schemaCompatibilityStrategy", nil)
	})
	return noun("schemas", "Topic schemas: versions, compatibility, deletion", get, upload, test, del, getSt, setSt, rmSt)
}

func nsCmd(use, short string, nargs int, run func(p string, args []string) error) *cobra.Command {
	return leaf(use, short, nargs, func(args []string) error {
		p, err := nsPath(args[0])
		if err != nil {
			return err
		}
		return run("/admin/v2/namespaces/"+p, args[1:])
	})
}

func namespaceMessagingCmds(a *adminCLI) []*cobra.Command {
	return []*cobra.Command{
		nsCmd("get-schema-compatibility-strategy <ns>", "Show the namespace's schema compatibility strategy", 1, func(p string, _ []string) error {
			return a.get(p+"/schemaCompatibilityStrategy", "")
		}),
		nsCmd("set-schema-compatibility-strategy <ns> <strategy>", "Set the namespace's schema compatibility strategy", 2, func(p string, args []string) error {
			return a.write("PUT", p+"/schemaCompatibilityStrategy", strings.ToUpper(args[0]))
		}),
		nsCmd("get-is-allow-auto-update-schema <ns>", "Show whether clients may register new schema versions", 1, func(p string, _ []string) error {
			return a.get(p+"/isAllowAutoUpdateSchema", "")
		}),
		nsCmd("set-is-allow-auto-update-schema <ns> <true|false>", "Allow or refuse new schema versions from clients", 2, func(p string, args []string) error {
			v, err := strconv.ParseBool(args[0])
			if err != nil {
				return err
			}
			return a.write("POST", p+"/isAllowAutoUpdateSchema", v)
		}),
		nsCmd("get-schema-validation-enforce <ns>", "Show whether producers without a schema are refused on topics with one", 1, func(p string, _ []string) error {
			return a.get(p+"/schemaValidationEnforced", "")
		}),
		nsCmd("set-schema-validation-enforce <ns> <true|false>", "Refuse producers without a schema on topics with one", 2, func(p string, args []string) error {
			v, err := strconv.ParseBool(args[0])
			if err != nil {
				return err
			}
			return a.write("POST", p+"/schemaValidationEnforced", v)
		}),
		nsCmd("get-compaction-threshold <ns>", "Show the backlog size that triggers compaction", 1, func(p string, _ []string) error {
			return a.get(p+"/compactionThreshold", "")
		}),
		nsCmd("set-compaction-threshold <ns> <size>", "Compact topics whose uncompacted backlog exceeds size (e.g. 100M; 0: never)", 2, func(p string, args []string) error {
			n, err := parseSize(args[0])
			if err != nil {
				return err
			}
			return a.write("PUT", p+"/compactionThreshold", n)
		}),
		nsCmd("remove-compaction-threshold <ns>", "Remove the namespace's compaction threshold", 1, func(p string, _ []string) error {
			return a.write("DELETE", p+"/compactionThreshold", nil)
		}),
	}
}

func topicCompactionCmds(a *adminCLI) []*cobra.Command {
	return []*cobra.Command{
		topicCmd("compact <topic>", "Start compacting the topic (keep the latest message per key)", 1, func(p string, _ []string) error {
			return a.write("PUT", p+"/compaction", nil)
		}),
		topicCmd("compaction-status <topic>", "Show the status of the topic's last compaction", 1, func(p string, _ []string) error {
			return a.get(p+"/compaction", "")
		}),
	}
}
