package conf

import (
	"fmt"
	"os"
	"strings"
)

// ReadYAMLFile reads a Pulsar YAML configuration (functions_worker.yml)
// as a key=value file: top-level scalars, lists (block "- item" lines or
// flow "[a, b]") as comma lists, and the entries of the "properties" map
// (where Pulsar's worker keeps tokenSecretKey and the like) as top-level
// keys; other nested maps are skipped. Each key keeps its line number for
// error messages.
func ReadYAMLFile(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(string(data), "\n")
	out := make([]string, len(lines))
	var (
		block  string // top-level key whose value is on the next lines
		at     int
		items  []string
		isList bool
	)
	flush := func() {
		if block != "" && (isList || len(items) == 0) {
			out[at] = block + "=" + strings.Join(items, ",")
		}
		block, items, isList = "", nil, false
	}
	for i, raw := range lines {
		line := strings.TrimRight(raw, " \t\r")
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		if c := strings.Index(trimmed, " #"); c >= 0 {
			trimmed = strings.TrimSpace(trimmed[:c])
		}
		if line[0] != ' ' && line[0] != '\t' {
			flush()
			k, v, ok := strings.Cut(trimmed, ":")
			if !ok || strings.TrimSpace(k) == "" {
				return nil, fmt.Errorf("%s:%d: %q is not key: value", path, i+1, trimmed)
			}
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			if v == "" {
				block, at = k, i
				continue
			}
			out[i] = k + "=" + yamlScalar(v)
			continue
		}
		switch {
		case block == "":
		case strings.HasPrefix(trimmed, "- ") || trimmed == "-":
			isList = true
			items = append(items, yamlScalar(strings.TrimSpace(trimmed[1:])))
		case block == "properties":
			if k, v, ok := strings.Cut(trimmed, ":"); ok {
				out[i] = strings.TrimSpace(k) + "=" + yamlScalar(strings.TrimSpace(v))
			}
			items = append(items, "") // a map, not a list: no value for the key
		default:
			items = append(items, "")
		}
	}
	flush()
	return Parse(strings.NewReader(strings.Join(out, "\n")), path)
}

// yamlScalar is a YAML scalar or flow list as a properties value: null
// is empty, quotes are dropped, [a, b] is "a,b".
func yamlScalar(v string) string {
	if v == "null" || v == "~" {
		return ""
	}
	if strings.HasPrefix(v, "[") && strings.HasSuffix(v, "]") {
		var parts []string
		for _, p := range strings.Split(v[1:len(v)-1], ",") {
			if p = yamlScalar(strings.TrimSpace(p)); p != "" {
				parts = append(parts, p)
			}
		}
		return strings.Join(parts, ",")
	}
	if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"' || v[0] == '\'' && v[len(v)-1] == '\'') {
		return v[1 : len(v)-1]
	}
	return v
}
