package main

// pulsarAdminGaps are the pulsaradmin methods of issue 33's interfaces
// that Magnetar does not answer as Pulsar does yet, each with what is
// missing; the test prints them. A gap's row runs and must still fail: when it passes, its entry
// goes.
var pulsarAdminGaps = map[string]string{
	"Topics.GetDeduplicationSnapshotInterval":           "deduplication snapshots are missing (dedup state is rebuilt from the log tail), so the interval would change nothing",
	"Topics.RemoveDeduplicationSnapshotInterval":        "deduplication snapshots are missing (dedup state is rebuilt from the log tail), so the interval would change nothing",
	"Topics.SetDeduplicationSnapshotInterval":           "deduplication snapshots are missing (dedup state is rebuilt from the log tail), so the interval would change nothing",
	"TopicPolicies.GetDeduplicationSnapshotInterval":    "deduplication snapshots are missing (dedup state is rebuilt from the log tail), so the interval would change nothing",
	"TopicPolicies.RemoveDeduplicationSnapshotInterval": "deduplication snapshots are missing (dedup state is rebuilt from the log tail), so the interval would change nothing",
	"TopicPolicies.SetDeduplicationSnapshotInterval":    "deduplication snapshots are missing (dedup state is rebuilt from the log tail), so the interval would change nothing",
}
