package schema

import (
	"fmt"
	"strings"
)

// Strategy is a schema compatibility strategy (Pulsar's
// SchemaCompatibilityStrategy).
type Strategy int

// The strategies; Undefined means "use the next layer's".
const (
	Undefined Strategy = iota
	AlwaysIncompatible
	AlwaysCompatible
	Backward
	Forward
	Full
	BackwardTransitive
	ForwardTransitive
	FullTransitive
)

var strategyNames = []string{"UNDEFINED", "ALWAYS_INCOMPATIBLE", "ALWAYS_COMPATIBLE", "BACKWARD", "FORWARD",
	"FULL", "BACKWARD_TRANSITIVE", "FORWARD_TRANSITIVE", "FULL_TRANSITIVE"}

func (s Strategy) String() string {
	if s >= 0 && int(s) < len(strategyNames) {
		return strategyNames[s]
	}
	return fmt.Sprintf("Strategy(%d)", int(s))
}

// Transitive reports whether s checks against every existing version.
func (s Strategy) Transitive() bool {
	return s == BackwardTransitive || s == ForwardTransitive || s == FullTransitive
}

func (s Strategy) backward() bool {
	return s == Backward || s == BackwardTransitive || s == Full || s == FullTransitive
}

func (s Strategy) forward() bool {
	return s == Forward || s == ForwardTransitive || s == Full || s == FullTransitive
}

// ParseStrategy accepts the strategy names (any case) and the older
// auto-update names (AutoUpdateDisabled, Backward, Forward, Full,
// AlwaysCompatible, BackwardTransitive, ForwardTransitive,
// FullTransitive); "" is Undefined.
func ParseStrategy(s string) (Strategy, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	switch strings.ReplaceAll(u, "_", "") {
	case "":
		return Undefined, nil
	case "AUTOUPDATEDISABLED":
		return AlwaysIncompatible, nil
	case "ALWAYSCOMPATIBLE":
		return AlwaysCompatible, nil
	case "ALWAYSINCOMPATIBLE":
		return AlwaysIncompatible, nil
	case "BACKWARDTRANSITIVE":
		return BackwardTransitive, nil
	case "FORWARDTRANSITIVE":
		return ForwardTransitive, nil
	case "FULLTRANSITIVE":
		return FullTransitive, nil
	}
	for i, n := range strategyNames {
		if n == u {
			return Strategy(i), nil
		}
	}
	return Undefined, fmt.Errorf("unknown schema compatibility strategy %q", s)
}

// Resolve returns the first defined strategy of layers (most specific
// first), else def.
func Resolve(def Strategy, layers ...Strategy) Strategy {
	for _, s := range layers {
		if s != Undefined {
			return s
		}
	}
	return def
}
