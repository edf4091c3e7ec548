// Package conf reads Apache Pulsar and BookKeeper configuration files
// (conf/standalone.conf, conf/broker.conf, conf/bookkeeper.conf) and
// applies them, with environment overrides, to a command's flags.
//
// # File format
//
// Java properties as Pulsar ships them: one key=value (or key: value) per
// line; lines starting with # or ! are comments; blank lines are ignored;
// key and value are trimmed; a line ending in a backslash continues on
// the next. An empty value means "unset" (the key is ignored, as Pulsar
// keeps a setting's default for an empty value), except for the keys
// whose empty value Pulsar gives a meaning of its own (Key.Empty: an
// empty brokerServicePort turns the port off). A key given twice: the
// last wins.
//
// Pulsar's functions_worker.yml is YAML: ReadYAMLFile reads its
// top-level scalars and lists, and the entries of its properties map, as
// keys of the same File.
//
// # Precedence
//
// Highest first: a flag given on the command line; MAGNETAR_<FLAG> (the
// flag name upper-cased, '-' as '_', e.g. MAGNETAR_MAX_MESSAGE_SIZE);
// PULSAR_PREFIX_<key> (Pulsar's key, exact case, as Pulsar's container
// images take it, e.g. PULSAR_PREFIX_maxMessageSize); the file; the
// flag's default.
//
// # Keys
//
// A Schema lists the keys a command supports, each mapped to one flag
// (some combine several keys: bindAddress and brokerServicePort make
// --listen), the keys whose only supported value is fixed (another value
// is an error, as it asks for behaviour Magnetar does not have), and the
// known keys it ignores. Any other key is unknown: reported once, never
// fatal. A bad value is an error naming the key and where it came from
// (file:line or the environment variable).
package conf

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/pflag"
)

// File is a parsed configuration file.
type File struct {
	Path   string
	values map[string]string
	lines  map[string]int
	order  []string
}

// ReadFile parses the file at path.
func ReadFile(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Parse(f, path)
}

// Parse reads key=value lines from r; path names it in errors.
func Parse(r io.Reader, path string) (*File, error) {
	cf := &File{Path: path, values: map[string]string{}, lines: map[string]int{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	n, start := 0, 0
	var pending string
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if pending == "" {
			start = n
			if line == "" || line[0] == '#' || line[0] == '!' {
				continue
			}
		}
		if strings.HasSuffix(line, `\`) {
			pending += strings.TrimSuffix(line, `\`)
			continue
		}
		line, pending = pending+line, ""
		i := strings.IndexAny(line, "=:")
		if i <= 0 {
			return nil, fmt.Errorf("%s:%d: %q is not key=value", path, start, line)
		}
		k, v := strings.TrimSpace(line[:i]), strings.TrimSpace(line[i+1:])
		if _, seen := cf.values[k]; !seen {
			cf.order = append(cf.order, k)
		}
		cf.values[k], cf.lines[k] = v, start
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if pending != "" {
		return nil, fmt.Errorf("%s:%d: continuation at end of file", path, start)
	}
	return cf, nil
}

// Keys lists the file's keys in file order.
func (f *File) Keys() []string { return slices.Clone(f.order) }

// Get returns the value of key (ok false when absent).
func (f *File) Get(key string) (string, bool) {
	v, ok := f.values[key]
	return v, ok
}

// Key maps Pulsar keys to one flag.
type Key struct {
	// Names are the Pulsar keys (most need one). The flag is set when any
	// of them has a (non-empty) value.
	Names []string
	// Flag is the flag the keys set.
	Flag string
	// Convert turns the keys' values (in Names order, "" when absent) into
	// the flag's value; cur is the flag's current value. nil: the single
	// key's value as is.
	Convert func(vals []string, cur string) (string, error)
	// Doc says what the key does in Magnetar (config dump, docs).
	Doc string
	// Empty gives an explicitly empty value of some of Names a meaning:
	// the flag is set to Empty[name] (Pulsar's Optional settings: an
	// empty brokerServicePort or webServicePort turns that listener
	// off). For the other names an empty value is absent.
	Empty map[string]string
}

// Fixed is a key whose only supported value is Value.
type Fixed struct {
	Name, Value string
	// Why says what Magnetar does instead.
	Why string
}

// Schema is what one command takes from a configuration file.
type Schema struct {
	Keys    []Key
	Fixed   []Fixed
	Ignored []string // known keys without effect in Magnetar (not reported)
}

// Names lists every key the schema knows (supported, fixed, ignored).
func (s *Schema) Names() []string {
	var out []string
	for _, k := range s.Keys {
		out = append(out, k.Names...)
	}
	for _, f := range s.Fixed {
		out = append(out, f.Name)
	}
	return append(out, s.Ignored...)
}

// Source tells where a flag's effective value came from.
type Source struct {
	Flag   string
	Value  string
	Origin string // "command line", "MAGNETAR_X", "PULSAR_PREFIX_k", "file:line (key)", "default"
}

// Result is what Apply did.
type Result struct {
	// Unknown lists the keys (file and PULSAR_PREFIX_) no schema entry
	// knows, sorted; they were ignored.
	Unknown []string
	// Sources of every flag of the set, sorted by flag name.
	Sources []Source
}

const (
	envMagnetar = "MAGNETAR_"
	envPulsar   = "PULSAR_PREFIX_"
)

// FlagEnv is the MAGNETAR_ variable of a flag.
func FlagEnv(flag string) string {
	return envMagnetar + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// Apply sets the flags of fs that were not given on the command line
// from env (os.Environ form) and file (nil: none), as the package doc
// says. Flags named in skip are never set from configuration (--config
// itself).
func (s *Schema) Apply(fs *pflag.FlagSet, file *File, env []string, skip ...string) (Result, error) {
	var res Result
	origin := map[string]string{}
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Changed {
			origin[f.Name] = "command line"
		}
	})
	// Key values: the file, overridden by PULSAR_PREFIX_.
	// empty holds the keys given with an empty value (and where).
	type val struct{ v, from string }
	vals := map[string]val{}
	empty := map[string]string{}
	put := func(k, v, from string) {
		if v == "" {
			delete(vals, k)
			empty[k] = from
			return
		}
		delete(empty, k)
		vals[k] = val{v, from}
	}
	if file != nil {
		for _, k := range file.order {
			put(k, file.values[k], fmt.Sprintf("%s:%d", file.Path, file.lines[k]))
		}
	}
	magnetarEnv := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, envPulsar):
			put(strings.TrimPrefix(k, envPulsar), v, k)
		case strings.HasPrefix(k, envMagnetar):
			magnetarEnv[k] = v
		}
	}
	known := map[string]bool{}
	for _, n := range s.Names() {
		known[n] = true
	}
	for k := range vals {
		if !known[k] {
			res.Unknown = append(res.Unknown, k)
		}
	}
	sort.Strings(res.Unknown)
	for _, fx := range s.Fixed {
		if v, ok := vals[fx.Name]; ok && !strings.EqualFold(v.v, fx.Value) {
			return res, fmt.Errorf("%s: %s=%s is not supported (only %s): %s", v.from, fx.Name, v.v, fx.Value, fx.Why)
		}
	}
	set := func(flag, value, from string) error {
		if err := fs.Set(flag, value); err != nil {
			return fmt.Errorf("%s: invalid value %q: %w", from, value, err)
		}
		origin[flag] = from
		return nil
	}
	for _, k := range s.Keys {
		if slices.Contains(skip, k.Flag) || origin[k.Flag] == "command line" {
			continue
		}
		f := fs.Lookup(k.Flag)
		if f == nil {
			return res, fmt.Errorf("conf: schema maps %v to unknown flag --%s", k.Names, k.Flag)
		}
		if n, off, from := k.emptyMeaning(empty); n != "" {
			if err := set(k.Flag, off, from+" ("+n+" empty)"); err != nil {
				return res, err
			}
			continue
		}
		in := make([]string, len(k.Names))
		var froms []string
		any := false
		for i, n := range k.Names {
			if v, ok := vals[n]; ok {
				in[i], any = v.v, true
				froms = append(froms, v.from+" ("+n+")")
			}
		}
		if !any {
			continue
		}
		from := strings.Join(froms, ", ")
		out := in[0]
		if k.Convert != nil {
			var err error
			if out, err = k.Convert(in, f.Value.String()); err != nil {
				return res, fmt.Errorf("%s: invalid value: %w", from, err)
			}
		}
		if err := set(k.Flag, out, from); err != nil {
			return res, err
		}
	}
	var ferr error
	fs.VisitAll(func(f *pflag.Flag) {
		if ferr != nil || slices.Contains(skip, f.Name) || origin[f.Name] == "command line" {
			return
		}
		name := FlagEnv(f.Name)
		if v, ok := magnetarEnv[name]; ok {
			ferr = set(f.Name, v, name)
		}
	})
	if ferr != nil {
		return res, ferr
	}
	fs.VisitAll(func(f *pflag.Flag) {
		o := origin[f.Name]
		if o == "" {
			o = "default"
		}
		res.Sources = append(res.Sources, Source{Flag: f.Name, Value: f.Value.String(), Origin: o})
	})
	return res, nil
}

// emptyMeaning returns the first of k's names that was given empty and
// has a meaning for that (Key.Empty), the flag value it stands for, and
// where it was given; n is "" when there is none.
func (k *Key) emptyMeaning(empty map[string]string) (n, off, from string) {
	for _, n := range k.Names {
		if off, ok := k.Empty[n]; ok {
			if from, given := empty[n]; given {
				return n, off, from
			}
		}
	}
	return "", "", ""
}
