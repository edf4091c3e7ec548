package cliflags

import (
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/magnetar-mq/magnetar/functions"
	"github.com/magnetar-mq/magnetar/functions/iopolicy"
	"github.com/magnetar-mq/magnetar/internal/conf"
)

// Functions are the function worker's package and instance
// process settings (standalone and functions-worker): where package URLs
// may point (Pulsar's functions_worker.yml keys) and which account
// instances of a root worker run as.
type Functions struct {
	functionsDir, connectorsDir   string
	functionsURLs, connectorsURLs []string
	instanceUser                  string
	authProvider                  string
	// What the builtin connectors may name (package functions/iopolicy).
	ioDirs, ioListen, ioHosts []string
}

// Register adds the flags to fl.
func (f *Functions) Register(fl *pflag.FlagSet) {
	fl.StringVar(&f.functionsDir, "functions-directory", "./functions", "file:// package URLs of functions must lie inside this directory (Pulsar's functionsDirectory; empty: none)")
	fl.StringVar(&f.connectorsDir, "connectors-directory", "./connectors", "file:// package URLs of sources and sinks must lie inside this directory (Pulsar's connectorsDirectory; empty: none)")
	fl.StringSliceVar(&f.functionsURLs, "functions-url-patterns", nil, "regular expressions (whole URL) of further allowed function package URLs, file:// or http(s):// (Pulsar's additionalEnabledFunctionsUrlPatterns)")
	fl.StringSliceVar(&f.connectorsURLs, "connectors-url-patterns", nil, "the same for sources and sinks (Pulsar's additionalEnabledConnectorUrlPatterns)")
	fl.StringVar(&f.instanceUser, "functions-instance-user", functions.DefaultInstanceUser, "account instances run as when the worker runs as root")
	fl.StringVar(&f.authProvider, "function-auth-provider", functions.ProviderToken, "credentials instances present: the submitter's token (Pulsar's functionAuthProviderClassName; the only provider)")
	fl.StringSliceVar(&f.ioDirs, "connectors-allowed-directories", nil, "directories the file source and sink may use, and below; {tenant} is replaced by the tenant (empty: none)")
	fl.StringSliceVar(&f.ioListen, "connectors-allowed-listen-addresses", iopolicy.DefaultListen, "HOST:PORTS the http (webhook) source may listen on; PORTS is *, N or N-M; 0.0.0.0 allows all interfaces")
	fl.StringSliceVar(&f.ioHosts, "connectors-allowed-hosts", nil, "HOST:PORTS the jdbc-postgres sink may connect to (empty: none)")
}

// Options are a worker's options from the flags, with builtin
// connectors run as this binary's functions-instance subcommand.
func (f *Functions) Options() (functions.Options, error) {
	exe, err := os.Executable()
	if err != nil {
		return functions.Options{}, fmt.Errorf("function worker: %w", err)
	}
	o := functions.Options{BuiltinCommand: []string{exe, "functions-instance"}}
	f.apply(&o)
	return o, nil
}

// apply copies the settings into o.
func (f *Functions) apply(o *functions.Options) {
	o.FunctionsDirectory, o.ConnectorsDirectory = f.functionsDir, f.connectorsDir
	o.FunctionsURLPatterns, o.ConnectorsURLPatterns = f.functionsURLs, f.connectorsURLs
	o.InstanceUser = f.instanceUser
	o.FunctionAuthProvider = f.authProvider
	o.ConnectorDirectories, o.ConnectorListenAddresses, o.ConnectorHosts = f.ioDirs, f.ioListen, f.ioHosts
}

// FunctionsKeys are the configuration keys of those flags.
var FunctionsKeys = []conf.Key{
	{Names: []string{"functionsDirectory"}, Flag: "functions-directory"},
	{Names: []string{"connectorsDirectory"}, Flag: "connectors-directory"},
	{Names: []string{"additionalEnabledFunctionsUrlPatterns"}, Flag: "functions-url-patterns"},
	{Names: []string{"additionalEnabledConnectorUrlPatterns"}, Flag: "connectors-url-patterns"},
	{Names: []string{"functionsInstanceUser"}, Flag: "functions-instance-user", Doc: "Magnetar's own key: the account instances of a root worker run as"},
	{Names: []string{"functionAuthProviderClassName"}, Flag: "function-auth-provider"},
	{Names: []string{"connectorsAllowedDirectories"}, Flag: "connectors-allowed-directories", Doc: "Magnetar's own key: directories the builtin file connectors may use"},
	{Names: []string{"connectorsAllowedListenAddresses"}, Flag: "connectors-allowed-listen-addresses", Doc: "Magnetar's own key: HOST:PORTS the builtin http source may listen on"},
	{Names: []string{"connectorsAllowedHosts"}, Flag: "connectors-allowed-hosts", Doc: "Magnetar's own key: HOST:PORTS the builtin jdbc-postgres sink may connect to"},
}

// The standalone's in-process worker and `magnetar functions-worker`
// (functions_worker.yml) take the same keys.
