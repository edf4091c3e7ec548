package main

import (
	"github.com/spf13/pflag"

	"github.com/magnetar-mq/magnetar/httpapi"
	"github.com/magnetar-mq/magnetar/internal/conf"
)

// httpFlags are the timeouts and caps of a command's HTTP listeners
// (httpapi.Limits): one flag per key under the same name
// (--maxHttpServerConnections=...), set by the role's --config file too.
type httpFlags struct {
	values map[string]*string
	fl     *pflag.FlagSet
}

// httpKeys maps every HTTP limit key to the flag of the same name.
func httpKeys() []conf.Key {
	var l httpapi.Limits
	var out []conf.Key
	for _, kv := range l.Keys() {
		out = append(out, conf.Key{Names: []string{kv[0]}, Flag: kv[0], Doc: kv[1]})
	}
	return out
}

func (h *httpFlags) register(fl *pflag.FlagSet) {
	h.fl = fl
	h.values = map[string]*string{}
	var l httpapi.Limits
	for _, kv := range l.Keys() {
		h.values[kv[0]] = fl.String(kv[0], "", kv[1])
		if l.IsBool(kv[0]) {
			fl.Lookup(kv[0]).NoOptDefVal = "true"
		}
	}
}

// limits returns the limits the flags (or the file) set; the others
// keep their defaults.
func (h *httpFlags) limits() (httpapi.Limits, error) {
	var l httpapi.Limits
	for k, v := range h.values {
		if h.fl.Changed(k) {
			if err := l.Set(k, *v); err != nil {
				return l, err
			}
		}
	}
	return l, nil
}
