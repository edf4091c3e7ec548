package dynconfig

import (
	"errors"
	"fmt"
	"strconv"
)

// checks are Magnetar's own limits on keys it reads, beyond the type
// Pulsar checks: a value the configuration file may not take either
// (docs/config-values.md) is refused at run time too, rather than
// applied with another meaning.
var checks = map[string]func(string) error{
	// A read batch of 0 would read nothing.
	"dispatcherMaxReadBatchSize": atLeast(1),
	// A shedding period of 0 has no meaning Pulsar documents.
	"loadBalancerSheddingIntervalMinutes": atLeast(1),
}

func atLeast(min int64) func(string) error {
	return func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < min {
			return fmt.Errorf("%q: must be at least %d", v, min)
		}
		return nil
	}
}

// errStartOnly marks a key Pulsar changes at run time that Magnetar reads
// only when it starts (a check returning it answers ErrNotDynamic; no
// key has one now).
var errStartOnly = errors.New("read only at start by Magnetar")
