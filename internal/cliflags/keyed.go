package cliflags

import (
	"github.com/spf13/pflag"

	"github.com/magnetar-mq/magnetar/internal/conf"
)

// keyedConfig is a configuration whose settings are named by keys
// (httpapi.Limits, auth.Config): one string flag per key, under the
// key's name.
type keyedConfig interface {
	// Keys are the keys and their help.
	Keys() [][2]string
	// IsBool reports a boolean key (the flag alone means true).
	IsBool(key string) bool
	// Set parses and stores one key's value.
	Set(key, value string) error
}

// keyed are the flags of a keyedConfig's keys.
type keyed struct {
	values map[string]*string
	fl     *pflag.FlagSet
}

// register adds one flag per key of c to fl.
func (k *keyed) register(fl *pflag.FlagSet, c keyedConfig) {
	k.fl = fl
	k.values = map[string]*string{}
	for _, kv := range c.Keys() {
		k.values[kv[0]] = fl.String(kv[0], "", kv[1])
		if c.IsBool(kv[0]) {
			fl.Lookup(kv[0]).NoOptDefVal = "true" // --authenticationEnabled alone means true
		}
	}
}

// setInto stores the keys whose flags were given (or set by the file)
// in c; set reports whether there was any.
func (k *keyed) setInto(c keyedConfig) (set bool, err error) {
	for key, v := range k.values {
		if k.fl.Changed(key) {
			if err := c.Set(key, *v); err != nil {
				return false, err
			}
			set = true
		}
	}
	return set, nil
}

// keysOf maps every key of c to the flag of the same name, except those
// taken by the schema have.
func keysOf(c keyedConfig, have []conf.Key) []conf.Key {
	taken := map[string]bool{}
	for _, k := range have {
		for _, n := range k.Names {
			taken[n] = true
		}
	}
	var out []conf.Key
	for _, kv := range c.Keys() {
		if !taken[kv[0]] {
			out = append(out, conf.Key{Names: []string{kv[0]}, Flag: kv[0], Doc: kv[1]})
		}
	}
	return out
}
