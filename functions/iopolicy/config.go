package iopolicy

import (
	"fmt"
	"path/filepath"
)

// Defaults of the builtin connectors' configs that name an address or a
// path.
const (
	DefaultWebhookAddress = "127.0.0.1:0"
	processedSuffix       = ".processed"
)

// Str returns configs[k] as text (def when absent), as the connectors
// read their configs.
func Str(cfg map[string]any, k, def string) string {
	if v, ok := cfg[k]; ok && v != nil {
		return fmt.Sprint(v)
	}
	return def
}

// ProcessedDirectory is where the file source moves a file it has sent:
// configs.processedDirectory, default INPUT/.processed.
func ProcessedDirectory(cfg map[string]any, input string) string {
	return Str(cfg, "processedDirectory", filepath.Join(input, processedSuffix))
}

// CheckConnector checks the configs of builtin connector name (kind
// "sources" or "sinks") deployed by tenant against the policy: every
// path, listen address and host they name. Configs the connector needs
// and that are missing are refused too, so a deployment that cannot run
// is not stored.
func (p *Policy) CheckConnector(name, kind, tenant string, cfg map[string]any) error {
	switch {
	case name == "file" && kind == "sources":
		in := Str(cfg, "inputDirectory", "")
		if in == "" {
			return fmt.Errorf("%w: file source: configs.inputDirectory is required", ErrRefused)
		}
		for _, d := range []struct{ key, path string }{{"inputDirectory", in}, {"processedDirectory", ProcessedDirectory(cfg, in)}} {
			if _, _, err := p.CheckPath(tenant, d.path); err != nil {
				return fmt.Errorf("file source: configs.%s: %w", d.key, err)
			}
		}
	case name == "file" && kind == "sinks":
		out := Str(cfg, "outputFile", "")
		if out == "" {
			return fmt.Errorf("%w: file sink: configs.outputFile is required", ErrRefused)
		}
		if _, rel, err := p.CheckPath(tenant, out); err != nil {
			return fmt.Errorf("file sink: configs.outputFile: %w", err)
		} else if rel == "." {
			return fmt.Errorf("%w: file sink: configs.outputFile %q is a directory the operator allows, not a file in it", ErrRefused, out)
		}
	case name == "http" && kind == "sources":
		if err := p.CheckListen(Str(cfg, "listenAddress", DefaultWebhookAddress)); err != nil {
			return fmt.Errorf("http source: configs.listenAddress: %w", err)
		}
	case name == "jdbc-postgres" && kind == "sinks":
		url := Str(cfg, "url", "")
		if url == "" {
			return fmt.Errorf("%w: jdbc-postgres sink: configs.url is required", ErrRefused)
		}
		if err := p.CheckPostgresURL(url); err != nil {
			return fmt.Errorf("jdbc-postgres sink: configs.url: %w", err)
		}
	}
	return nil
}
