package cliflags

import (
	"github.com/spf13/pflag"

	"github.com/magnetar-mq/magnetar/httpapi"
	"github.com/magnetar-mq/magnetar/internal/conf"
)

// HTTP are the timeouts and caps of a command's HTTP listeners
// (httpapi.Limits): one flag per key under the same name
// (--maxHttpServerConnections=...), set by the role's --config file too.
type HTTP struct{ keyed }

// HTTPKeys maps every HTTP limit key to the flag of the same name.
func HTTPKeys() []conf.Key { return keysOf(&httpapi.Limits{}, nil) }

// Register adds one flag per limit to fl.
func (h *HTTP) Register(fl *pflag.FlagSet) { h.register(fl, &httpapi.Limits{}) }

// Limits returns the limits the flags (or the file) set; the others
// keep their defaults.
func (h *HTTP) Limits() (httpapi.Limits, error) {
	var l httpapi.Limits
	_, err := h.setInto(&l)
	return l, err
}
