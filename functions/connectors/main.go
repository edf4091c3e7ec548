package connectors

import (
	"fmt"
	"os"
	"strconv"

	"github.com/magnetar-mq/magnetar/functions/iopolicy"
	"github.com/magnetar-mq/magnetar/functions/sdk"
)

// Main runs builtin connector name in this process. Before it touches
// anything it checks its configs against the operator's policy, which
// the worker passes in iopolicy.EnvPolicy (none: nothing is allowed).
func Main(name string) error {
	pol, err := iopolicy.Decode(os.Getenv(iopolicy.EnvPolicy))
	if err != nil {
		return err
	}
	in, ctx, closeAll, err := sdk.Start()
	if err != nil {
		return err
	}
	defer closeAll()
	kind := in.Spec.Kind
	if err := pol.CheckConnector(name, kind, in.Spec.Tenant, in.Spec.UserConfig); err != nil {
		return err
	}
	switch {
	case name == "file" && kind == "sources":
		return fileSource(ctx, in, pol)
	case name == "http" && kind == "sources":
		return httpSource(ctx, in, pol)
	case name == "file" && kind == "sinks":
		return fileSink(ctx, in, pol)
	case name == "log" && kind == "sinks":
		return logSink(ctx, in)
	case name == "jdbc-postgres" && kind == "sinks":
		return postgresSink(ctx, in, pol)
	}
	return fmt.Errorf("no builtin %s connector %q", kind, name)
}

func str(cfg map[string]any, k, def string) string { return iopolicy.Str(cfg, k, def) }

func num(cfg map[string]any, k string, def int) (int, error) {
	v, ok := cfg[k]
	if !ok || v == nil {
		return def, nil
	}
	switch x := v.(type) {
	case float64:
		if x != float64(int(x)) || x < 1 || x > 1<<20 {
			return 0, fmt.Errorf("configs.%s %v: want an integer in 1..%d", k, v, 1<<20)
		}
		return int(x), nil
	case string:
		n, err := strconv.Atoi(x)
		if err != nil || n < 1 || n > 1<<20 {
			return 0, fmt.Errorf("configs.%s %q: want an integer in 1..%d", k, x, 1<<20)
		}
		return n, nil
	}
	return 0, fmt.Errorf("configs.%s %v: want an integer", k, v)
}
