package policy

// MessagingPolicies are the namespace's schema and compaction policies,
// embedded in Policies (their JSON fields sit at the document's top level,
// with Pulsar's names). Unset fields mean "broker default".
type MessagingPolicies struct {
	// SchemaCompatibilityStrategy is a strategy name (package schema);
	// "" or "UNDEFINED" falls back to SchemaAutoUpdateCompatibilityStrategy,
	// then to the broker's schemaCompatibilityStrategy.
	SchemaCompatibilityStrategy string `json:"schema_compatibility_strategy,omitempty"`
	// SchemaAutoUpdateCompatibilityStrategy is Pulsar's older policy
	// (AutoUpdateDisabled, Backward, Forward, Full, AlwaysCompatible,
	// BackwardTransitive, ForwardTransitive, FullTransitive).
	SchemaAutoUpdateCompatibilityStrategy string `json:"schema_auto_update_compatibility_strategy,omitempty"`
	// IsAllowAutoUpdateSchema lets producers and consumers register new
	// schema versions (default true); when false only the admin API can.
	IsAllowAutoUpdateSchema *bool `json:"is_allow_auto_update_schema,omitempty"`
	// SchemaValidationEnforced refuses producers without a schema on
	// topics that have one (default: the broker's
	// isSchemaValidationEnforced).
	SchemaValidationEnforced *bool `json:"schema_validation_enforced,omitempty"`
	// CompactionThreshold triggers compaction of a topic once its backlog
	// not yet compacted exceeds this many bytes (0 or unset: never).
	CompactionThreshold *int64 `json:"compaction_threshold,omitempty"`
}
