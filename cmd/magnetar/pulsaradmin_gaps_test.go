package main

// pulsarAdminGaps are the pulsaradmin methods of issue 33's interfaces
// that Magnetar does not answer as Pulsar does yet, each with what is
// missing, or (rowNotWritten) that have no row yet; the test prints
// them. A gap's row runs and must still fail: when it passes, its entry
// goes.
var pulsarAdminGaps = map[string]string{
	"Topics.GetDeduplicationSnapshotInterval":           "deduplication snapshots are missing (dedup state is rebuilt from the log tail), so the interval would change nothing",
	"Topics.RemoveDeduplicationSnapshotInterval":        "deduplication snapshots are missing (dedup state is rebuilt from the log tail), so the interval would change nothing",
	"Topics.SetDeduplicationSnapshotInterval":           "deduplication snapshots are missing (dedup state is rebuilt from the log tail), so the interval would change nothing",
	"Namespaces.DeleteBookieAffinityGroup":              "bookie affinity groups (persistence/bookieAffinity) are missing",
	"Namespaces.GetBookieAffinityGroup":                 "bookie affinity groups (persistence/bookieAffinity) are missing",
	"Namespaces.SetBookieAffinityGroup":                 "bookie affinity groups (persistence/bookieAffinity) are missing",
	"BrokerStats.GetMetrics":                            "/admin/v2/broker-stats/metrics is missing",
	"BrokerStats.GetTopics":                             "/admin/v2/broker-stats/topics is missing",
	"TopicPolicies.GetDeduplicationSnapshotInterval":    "deduplication snapshots are missing (dedup state is rebuilt from the log tail), so the interval would change nothing",
	"TopicPolicies.RemoveDeduplicationSnapshotInterval": "deduplication snapshots are missing (dedup state is rebuilt from the log tail), so the interval would change nothing",
	"TopicPolicies.SetDeduplicationSnapshotInterval":    "deduplication snapshots are missing (dedup state is rebuilt from the log tail), so the interval would change nothing",
	"Sinks.CreateSink":                                  rowNotWritten,
	"Sinks.CreateSinkWithURL":                           rowNotWritten,
	"Sinks.DeleteSink":                                  rowNotWritten,
	"Sinks.GetBuiltInSinks":                             rowNotWritten,
	"Sinks.GetSink":                                     rowNotWritten,
	"Sinks.GetSinkStatus":                               rowNotWritten,
	"Sinks.GetSinkStatusWithID":                         rowNotWritten,
	"Sinks.ListSinks":                                   rowNotWritten,
	"Sinks.ReloadBuiltInSinks":                          rowNotWritten,
	"Sinks.RestartSink":                                 rowNotWritten,
	"Sinks.RestartSinkWithID":                           rowNotWritten,
	"Sinks.StartSink":                                   rowNotWritten,
	"Sinks.StartSinkWithID":                             rowNotWritten,
	"Sinks.StopSink":                                    rowNotWritten,
	"Sinks.StopSinkWithID":                              rowNotWritten,
	"Sinks.UpdateSink":                                  rowNotWritten,
	"Sinks.UpdateSinkWithURL":                           rowNotWritten,
	"Sources.CreateSource":                              rowNotWritten,
	"Sources.CreateSourceWithURL":                       rowNotWritten,
	"Sources.DeleteSource":                              rowNotWritten,
	"Sources.GetBuiltInSources":                         rowNotWritten,
	"Sources.GetSource":                                 rowNotWritten,
	"Sources.GetSourceStatus":                           rowNotWritten,
	"Sources.GetSourceStatusWithID":                     rowNotWritten,
	"Sources.ListSources":                               rowNotWritten,
	"Sources.ReloadBuiltInSources":                      rowNotWritten,
	"Sources.RestartSource":                             rowNotWritten,
	"Sources.RestartSourceWithID":                       rowNotWritten,
	"Sources.StartSource":                               rowNotWritten,
	"Sources.StartSourceWithID":                         rowNotWritten,
	"Sources.StopSource":                                rowNotWritten,
	"Sources.StopSourceWithID":                          rowNotWritten,
	"Sources.UpdateSource":                              rowNotWritten,
	"Sources.UpdateSourceWithURL":                       rowNotWritten,
}

// rowNotWritten: the row was not written yet (no claim either way on whether Magnetar answers as Pulsar does).
const rowNotWritten = "no row yet"
