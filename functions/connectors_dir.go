package functions

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/magnetar-mq/magnetar/httpapi"
)

// Connectors of the operator's connectors directory (Pulsar's
// connectorsDirectory): besides the compiled-in Builtins, every
// subdirectory of ConnectorsDirectory holding a descriptor file
// pulsar-io.yaml (the file Pulsar reads from a connector archive's
// META-INF/services) is a builtin connector:
//
//	name: NAME               # builtin://NAME
//	description: TEXT
//	sourceClass: ...         # set: it is a source
//	sinkClass: ...           # set: it is a sink
//	executable: FILE         # Magnetar's: the program, next to the descriptor
//
// The worker reads the directory at start and again only when a superuser
// asks (POST /admin/v3/sources/reloadBuiltInSources or
// /admin/v3/sinks/reloadBuiltInSinks, as in Pulsar; both rescan the one
// directory). A descriptor that does not parse, names no kind, names a
// compiled-in connector or one seen before, or whose executable is not a
// plain file name of a regular file beside it, is skipped with a warning.
// Creating a source or sink with builtin://NAME of such a connector
// stores its executable as the deployment's package, as an upload would;
// a tenant only ever gives the NAME, looked up among the scanned ones: no
// value a tenant sets names a path.

// descriptorFile is the connector descriptor's file name.
const descriptorFile = "pulsar-io.yaml"

// dirConnector is one connector of the connectors directory.
type dirConnector struct {
	BuiltinInfo
	SourceClass, SinkClass string
	exe                    string // absolute path of the executable
}

// connectorDescriptor is pulsar-io.yaml.
type connectorDescriptor struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	SourceClass string `yaml:"sourceClass"`
	SinkClass   string `yaml:"sinkClass"`
	Executable  string `yaml:"executable"`
}

// scanConnectors reads the connectors of dir ("" or missing: none).
func (w *Worker) scanConnectors(dir string) map[string]dirConnector {
	out := map[string]dirConnector{}
	if dir == "" {
		return out
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		if !os.IsNotExist(err) {
			w.log.Warn("functions: connectors directory unreadable", "dir", dir, "err", err)
		}
		return out
	}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		sub := filepath.Join(dir, e.Name())
		c, err := readConnector(sub)
		if err != nil {
			w.log.Warn("functions: connector skipped", "dir", sub, "err", err)
			continue
		}
		if isCompiledBuiltin(c.Name) {
			w.log.Warn("functions: connector skipped: the name is a compiled-in connector's", "dir", sub, "name", c.Name)
			continue
		}
		if prev, dup := out[c.Name]; dup {
			w.log.Warn("functions: connector skipped: name taken", "dir", sub, "name", c.Name, "by", filepath.Dir(prev.exe))
			continue
		}
		out[c.Name] = c
	}
	return out
}

// readConnector reads the descriptor of the connector in dir.
func readConnector(dir string) (dirConnector, error) {
	raw, err := os.ReadFile(filepath.Join(dir, descriptorFile))
	if err != nil {
		return dirConnector{}, err
	}
	var d connectorDescriptor
	if err := yaml.Unmarshal(raw, &d); err != nil {
		return dirConnector{}, fmt.Errorf("%s: %w", descriptorFile, err)
	}
	if !nameRe.MatchString(d.Name) {
		return dirConnector{}, fmt.Errorf("%s: name %q must match %s", descriptorFile, d.Name, nameRe)
	}
	if d.SourceClass == "" && d.SinkClass == "" {
		return dirConnector{}, fmt.Errorf("%s: neither sourceClass nor sinkClass is set", descriptorFile)
	}
	if d.Executable == "" || filepath.Base(d.Executable) != d.Executable || d.Executable == "." || d.Executable == ".." {
		return dirConnector{}, fmt.Errorf("%s: executable %q must be a file name beside the descriptor", descriptorFile, d.Executable)
	}
	exe := filepath.Join(dir, d.Executable)
	if st, err := os.Lstat(exe); err != nil || !st.Mode().IsRegular() {
		return dirConnector{}, fmt.Errorf("%s: executable %s is not a regular file", descriptorFile, exe)
	}
	abs, err := filepath.Abs(exe)
	if err != nil {
		return dirConnector{}, err
	}
	return dirConnector{BuiltinInfo: BuiltinInfo{Name: d.Name, Description: d.Description, Source: d.SourceClass != "", Sink: d.SinkClass != ""},
		SourceClass: d.SourceClass, SinkClass: d.SinkClass, exe: abs}, nil
}

func isCompiledBuiltin(name string) bool {
	return slices.ContainsFunc(Builtins, func(b BuiltinInfo) bool { return b.Name == name })
}

// reloadConnectors rescans the connectors directory.
func (w *Worker) reloadConnectors() {
	found := w.scanConnectors(w.opts.ConnectorsDirectory)
	w.connMu.Lock()
	w.dirConns = found
	w.connMu.Unlock()
}

// dirConnector returns the scanned connector name.
func (w *Worker) dirConnector(name string) (dirConnector, bool) {
	w.connMu.RLock()
	defer w.connMu.RUnlock()
	c, ok := w.dirConns[name]
	return c, ok
}

// connectorList is Pulsar's ConnectorDefinition list of one kind: the
// compiled-in connectors, then the directory's by name.
func (w *Worker) connectorList(source bool) []map[string]string {
	out := []map[string]string{}
	for _, b := range Builtins {
		if (source && b.Source) || (!source && b.Sink) {
			out = append(out, map[string]string{"name": b.Name, "description": b.Description})
		}
	}
	w.connMu.RLock()
	var names []string
	for n := range w.dirConns {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		c := w.dirConns[n]
		if (source && c.Source) || (!source && c.Sink) {
			m := map[string]string{"name": c.Name, "description": c.Description}
			if c.SourceClass != "" {
				m["sourceClass"] = c.SourceClass
			}
			if c.SinkClass != "" {
				m["sinkClass"] = c.SinkClass
			}
			out = append(out, m)
		}
	}
	w.connMu.RUnlock()
	return out
}

// resolveDirConnector stores the executable of the directory connector
// name as a package of kind k and returns its id.
func (w *Worker) resolveDirConnector(ctx context.Context, k Kind, name string) (string, bool, error) {
	c, ok := w.dirConnector(name)
	if !ok {
		return "", false, nil
	}
	if (k == KindSource && !c.Source) || (k == KindSink && !c.Sink) || k == KindFunction {
		return "", true, badf("builtin connector %q is no %s", name, strings.TrimSuffix(string(k), "s"))
	}
	data, err := os.ReadFile(c.exe)
	if err != nil {
		return "", true, fmt.Errorf("builtin connector %q: %w", name, err)
	}
	id, err := w.st.putPackage(ctx, data)
	return id, true, err
}

func (w *Worker) handleReloadConnectors(rw http.ResponseWriter, _ *http.Request, _ httpapi.Params) {
	w.reloadConnectors()
	rw.WriteHeader(http.StatusNoContent)
}
