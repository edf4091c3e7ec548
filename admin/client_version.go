package admin

import (
	"strconv"
	"strings"
)

// Pulsar's clientLibraryVersionCheckEnabled (dynamic): with it on, GET
// .../{topic}/partitions on a topic of more than one partition refuses
// HTTP clients that cannot use partitioned topics, as Pulsar's
// PersistentTopicsBase (internalGetPartitionedMetadataAsync →
// internalValidateClientVersionAsync) does: a request with no
// User-Agent, and a C++ client older than 1.21 ("Pulsar-CPP-vX.Y" with
// X < 1 or Y < 21, compared field by field as Pulsar does). The binary
// protocol's PARTITIONED_METADATA is not checked (Pulsar's ServerCnx
// does not either), nor a topic of 0 or 1 partition. Refusals are 405
// with Pulsar's reasons.

// clientVersionKey is the dynamic key (dynconfig) that turns the check
// on or off at run time.
const clientVersionKey = "clientLibraryVersionCheckEnabled"

// cppClientPrefix is how a C++ client names itself in its User-Agent;
// cppLeastMajor.cppLeastMinor is the oldest one Pulsar admits.
const (
	cppClientPrefix = "Pulsar-CPP-v"
	cppLeastMajor   = 1
	cppLeastMinor   = 21
)

// watchClientVersionCheck starts with the configuration file's value
// and follows the dynamic override of the key (BrokerConfig.Watch)
// when the broker has a dynamic configuration.
func (a *API) watchClientVersionCheck(fileValue bool) {
	a.versionCheck.Store(fileValue)
	if a.conf == nil {
		return
	}
	a.conf.Watch(clientVersionKey, func(v string, set bool) {
		on := fileValue
		if set {
			on = strings.EqualFold(v, "true") // Java's Boolean.valueOf
		}
		a.versionCheck.Store(on)
	})
}

// clientVersionRefusal is Pulsar's reason for refusing a partitioned
// topic's metadata to a client with this User-Agent ("": admitted).
func clientVersionRefusal(userAgent string) string {
	if strings.TrimSpace(userAgent) == "" {
		return "Client lib is not compatible to access partitioned metadata: version in user-agent is not present"
	}
	if !strings.Contains(userAgent, cppClientPrefix) {
		return ""
	}
	// Pulsar takes the text after the first prefix (up to a second
	// one), before its first '-', trimmed, split at dots; with at least
	// two fields it compares the first two. A field that is not a number
	// fails the parse, which Pulsar logs and lets pass.
	tokens := javaSplit(userAgent, cppClientPrefix)
	if len(tokens) < 2 {
		return ""
	}
	dash := javaSplit(tokens[1], "-")
	if len(dash) == 0 {
		return ""
	}
	fields := javaSplit(strings.TrimFunc(dash[0], func(r rune) bool { return r <= ' ' }), ".")
	if len(fields) < 2 {
		return ""
	}
	major, err1 := strconv.ParseInt(fields[0], 10, 32)
	minor, err2 := strconv.ParseInt(fields[1], 10, 32)
	if err1 != nil || err2 != nil {
		return ""
	}
	if cppLeastMajor > major || cppLeastMinor > minor {
		return "Client lib is not compatible to access partitioned metadata: version " + userAgent + " is not supported"
	}
	return ""
}

// javaSplit splits s at every sep as Java's String.split does with a
// literal pattern: trailing empty strings are dropped, and a string
// without sep is one field.
func javaSplit(s, sep string) []string {
	out := strings.Split(s, sep)
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}
