package functions

import (
	"strings"

	"github.com/magnetar-mq/magnetar/functions/iopolicy"
)

// The builtin connectors' configs name paths (file source and sink),
// listen addresses (http source) and hosts (jdbc-postgres sink); the
// operator's allow-list (Options.Connector*, package functions/iopolicy)
// decides which they may name. A source or sink is checked when it is
// created or updated (a refused value is a 400; nothing is stored),
// before each start of an instance (a refused value keeps it stopped,
// with the reason in its status), and by the connector itself when it
// starts, against the policy handed to it in iopolicy.EnvPolicy.

func newIOPolicy(o Options) (*iopolicy.Policy, error) {
	listen := o.ConnectorListenAddresses
	if listen == nil {
		listen = iopolicy.DefaultListen
	}
	return iopolicy.New(o.ConnectorDirectories, listen, o.ConnectorHosts)
}

// checkIO checks a source or sink that runs a builtin connector.
func (w *Worker) checkIO(kind Kind, spec *Spec) error {
	name, ok := strings.CutPrefix(spec.Package, "builtin://")
	if !ok || kind == KindFunction {
		return nil
	}
	if err := w.io.CheckConnector(name, string(kind), spec.Tenant, spec.UserConfig); err != nil {
		return badf("%v", err)
	}
	return nil
}
