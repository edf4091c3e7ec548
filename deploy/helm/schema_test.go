package helmchart

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// swaggerDoc is the part of an OpenAPI v2 document the conversion reads.
type swaggerDoc struct {
	Definitions map[string]map[string]any `json:"definitions"`
}

// special definitions whose YAML forms are wider than their OpenAPI type.
var special = map[string]map[string]any{
	"io.k8s.apimachinery.pkg.util.intstr.IntOrString": {"oneOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}}},
	"io.k8s.apimachinery.pkg.api.resource.Quantity":   {"oneOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "number"}}},
}

// schemaFileName is kubeconform's {{ .ResourceKind }}{{ .KindSuffix }}.json
// for a group/version/kind: the lower-case kind, the group's first label
// (none for the core group) and the version.
func schemaFileName(group, version, kind string) string {
	suffix := "-" + strings.ToLower(version)
	if group != "" {
		suffix = "-" + strings.ToLower(strings.Split(group, ".")[0]) + suffix
	}
	return strings.ToLower(kind) + suffix + ".json"
}

// writeSchemas converts the swagger document at src into one strict JSON
// schema per group/version/kind in dir and returns how many it wrote.
func writeSchemas(src, dir string) (int, error) {
	raw, err := os.ReadFile(src)
	if err != nil {
		return 0, err
	}
	var doc swaggerDoc
	if err := json.Unmarshal(raw, &doc); err != nil {
		return 0, fmt.Errorf("%s: %w", src, err)
	}
	n := 0
	for name, def := range doc.Definitions {
		gvks, _ := def["x-kubernetes-group-version-kind"].([]any)
		if len(gvks) == 0 {
			continue
		}
		s, err := inline(doc, name, map[string]bool{})
		if err != nil {
			return n, fmt.Errorf("%s: %w", name, err)
		}
		s["$schema"] = "http://json-schema.org/schema#"
		out, err := json.Marshal(s)
		if err != nil {
			return n, err
		}
		for _, g := range gvks {
			gvk, _ := g.(map[string]any)
			group, _ := gvk["group"].(string)
			version, _ := gvk["version"].(string)
			kind, _ := gvk["kind"].(string)
			if err := os.WriteFile(filepath.Join(dir, schemaFileName(group, version, kind)), out, 0o644); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, nil
}

// inline returns definition name with every $ref replaced by the
// definition it names; a reference back into the chain (recursive
// types) becomes an open schema.
func inline(doc swaggerDoc, name string, chain map[string]bool) (map[string]any, error) {
	if s, ok := special[name]; ok {
		return s, nil
	}
	def, ok := doc.Definitions[name]
	if !ok {
		return nil, fmt.Errorf("no definition %q", name)
	}
	if chain[name] {
		return map[string]any{}, nil
	}
	chain[name] = true
	defer delete(chain, name)
	v, err := convert(doc, def, chain)
	if err != nil {
		return nil, err
	}
	return v.(map[string]any), nil
}

// convert copies one schema node, inlining references, dropping
// OpenAPI-only keywords, and closing objects that list their properties.
func convert(doc swaggerDoc, node any, chain map[string]bool) (any, error) {
	switch n := node.(type) {
	case map[string]any:
		if ref, ok := n["$ref"].(string); ok {
			return inline(doc, strings.TrimPrefix(ref, "#/definitions/"), chain)
		}
		out := map[string]any{}
		for k, v := range n {
			if strings.HasPrefix(k, "x-kubernetes-") || k == "format" {
				continue
			}
			if k == "properties" {
				props := map[string]any{}
				for pk, pv := range v.(map[string]any) {
					c, err := convert(doc, pv, chain)
					if err != nil {
						return nil, err
					}
					props[pk] = c
				}
				out[k] = props
				continue
			}
			c, err := convert(doc, v, chain)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		if _, hasProps := out["properties"]; hasProps {
			if _, set := out["additionalProperties"]; !set {
				out["additionalProperties"] = false
			}
		}
		return out, nil
	case []any:
		out := make([]any, len(n))
		for i, v := range n {
			c, err := convert(doc, v, chain)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	}
	return node, nil
}

// TestSchemaConversion: references are inlined (also in arrays and
// maps), objects with properties are closed, IntOrString widened, a
// recursive type terminates, and file names follow kubeconform's.
func TestSchemaConversion(t *testing.T) {
	doc := `{"definitions":{
	  "io.k8s.api.x.v1.Thing":{"type":"object","x-kubernetes-group-version-kind":[{"group":"x.k8s.io","version":"v1","kind":"Thing"}],
	    "required":["spec"],
	    "properties":{"spec":{"$ref":"#/definitions/io.k8s.api.x.v1.Spec"},"labels":{"type":"object","additionalProperties":{"type":"string"}}}},
	  "io.k8s.api.x.v1.Spec":{"type":"object","properties":{"port":{"$ref":"#/definitions/io.k8s.apimachinery.pkg.util.intstr.IntOrString"},
	    "items":{"type":"array","items":{"$ref":"#/definitions/io.k8s.api.x.v1.Spec"}},"n":{"type":"integer","format":"int32"}}},
	  "io.k8s.apimachinery.pkg.util.intstr.IntOrString":{"type":"string","format":"int-or-string"},
	  "io.k8s.api.core.v1.Pod":{"type":"object","x-kubernetes-group-version-kind":[{"group":"","version":"v1","kind":"Pod"}],"properties":{}}
	}}`
	dir := t.TempDir()
	src := filepath.Join(dir, "swagger.json")
	if err := os.WriteFile(src, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	n, err := writeSchemas(src, dir)
	if err != nil || n != 2 {
		t.Fatalf("wrote %d schemas, err %v; want 2", n, err)
	}
	var thing map[string]any
	b, err := os.ReadFile(filepath.Join(dir, "thing-x-v1.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &thing); err != nil {
		t.Fatal(err)
	}
	if thing["additionalProperties"] != false {
		t.Errorf("Thing is not closed: %v", thing["additionalProperties"])
	}
	props := thing["properties"].(map[string]any)
	if props["labels"].(map[string]any)["additionalProperties"].(map[string]any)["type"] != "string" {
		t.Errorf("a map's value schema was replaced: %v", props["labels"])
	}
	spec := props["spec"].(map[string]any)
	if spec["additionalProperties"] != false || spec["$ref"] != nil {
		t.Errorf("spec not inlined and closed: %v", spec)
	}
	sp := spec["properties"].(map[string]any)
	if _, ok := sp["port"].(map[string]any)["oneOf"]; !ok {
		t.Errorf("IntOrString not widened: %v", sp["port"])
	}
	if _, ok := sp["n"].(map[string]any)["format"]; ok {
		t.Errorf("format kept: %v", sp["n"])
	}
	if rec := sp["items"].(map[string]any)["items"].(map[string]any); len(rec) != 0 {
		t.Errorf("the recursive reference is not open: %v", rec)
	}
	if _, err := os.Stat(filepath.Join(dir, "pod-v1.json")); err != nil {
		t.Errorf("core kind file: %v", err)
	}
}
