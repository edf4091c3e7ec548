package main

// The broker's configuration as Pulsar's /admin/v2/brokers/configuration/
// runtime answers it: every key of the role's schema (config.go) under
// Pulsar's name with the value in force, in Pulsar's units; and
// InternalConfigurationData. Secrets never appear: the values of
// secret-holding settings are redacted as `config dump` does.

import (
	"net"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/magnetar-mq/magnetar/dynconfig"
	"github.com/magnetar-mq/magnetar/internal/conf"
	"github.com/magnetar-mq/magnetar/internal/conf/convert"
)

// runtimeConfig renders role's settings from the parsed flags fs.
func runtimeConfig(role string, fs *pflag.FlagSet) map[string]string {
	out := map[string]string{}
	s := schemas[role]
	for _, k := range s.Keys {
		f := fs.Lookup(k.Flag)
		if f == nil {
			continue
		}
		for name, v := range pulsarValues(k, f) {
			out[name] = redact(name, redact(k.Flag, v))
		}
	}
	for _, fx := range s.Fixed {
		out[fx.Name] = fx.Value
	}
	return out
}

// pulsarValues turns a flag's value back into its Pulsar key(s).
func pulsarValues(k conf.Key, f *pflag.Flag) map[string]string {
	val := f.Value.String()
	if sv, ok := f.Value.(pflag.SliceValue); ok {
		val = strings.Join(sv.GetSlice(), ",")
	}
	name := k.Names[0]
	switch {
	case sameFunc(k.Convert, convert.HostPort):
		host, port, err := net.SplitHostPort(val)
		if err != nil {
			return map[string]string{name: val}
		}
		if host == "" {
			host = "0.0.0.0"
		}
		return map[string]string{"bindAddress": host, k.Names[1]: port}
	case sameFunc(k.Convert, convert.Not):
		b, err := strconv.ParseBool(val)
		if err == nil {
			val = strconv.FormatBool(!b)
		}
	case f.Value.Type() == "duration":
		d, err := time.ParseDuration(val)
		if err == nil {
			val = strconv.FormatInt(int64(max(d, 0)/unitOf(name)), 10)
		}
	}
	return map[string]string{name: val}
}

// unitOf is the unit a Pulsar key of a duration names by its suffix.
func unitOf(name string) time.Duration {
	n := strings.ToLower(name)
	switch {
	case strings.HasSuffix(n, "minutes"):
		return time.Minute
	case strings.HasSuffix(n, "millis"), strings.HasSuffix(n, "ms"), strings.HasSuffix(n, "msec"), strings.HasSuffix(n, "interval"):
		return time.Millisecond
	}
	return time.Second
}

// sameFunc reports whether the converter a is b.
func sameFunc(a, b func([]string, string) (string, error)) bool {
	return a != nil && reflect.ValueOf(a).Pointer() == reflect.ValueOf(b).Pointer()
}

// internalData is InternalConfigurationData for a broker whose metadata
// store is metaURL (zk://hosts/chroot or embedded:PATH) and whose
// configuration store is configURL ("" = the same).
func internalData(metaURL, configURL string) dynconfig.InternalData {
	if configURL == "" {
		configURL = metaURL
	}
	pulsarURL := func(u string) (url, servers string) {
		if rest, ok := strings.CutPrefix(u, "zk://"); ok {
			return "zk:" + rest, rest
		}
		return u, ""
	}
	d := dynconfig.InternalData{LedgersRootPath: "/ledgers"}
	d.MetadataStoreURL, d.ZookeeperServers = pulsarURL(metaURL)
	d.ConfigurationMetadataStoreURL, d.ConfigurationStoreServers = pulsarURL(configURL)
	if d.ZookeeperServers != "" {
		hosts, chroot, _ := strings.Cut(d.ZookeeperServers, "/")
		if chroot != "" {
			chroot = "/" + chroot
		}
		d.BookkeeperMetadataServiceURI = "zk+hierarchical://" + strings.ReplaceAll(hosts, ",", ";") + chroot + "/ledgers"
	} else {
		d.BookkeeperMetadataServiceURI = "metadata-store:" + metaURL + "/ledgers"
	}
	return d
}
