// Package entrymeta is broker entry metadata (Pulsar's
// brokerEntryMetadataInterceptors): with it on, every entry a producer
// publishes is stored with a 0x0e02 block in front, holding the broker's
// receive time (AppendBrokerTimestampMetadataInterceptor) and/or the index
// of the entry's last message in the topic (AppendIndexMetadataInterceptor,
// messages numbered from 0 across ledgers and restarts).
// docs/broker-entry-metadata.md has the format and the rules.
//
// It is a feature of the broker core: a broker.PublishInterceptor whose
// BeforeAdd stamps the block (the core holds the topic's add order across
// it and the append, so indexes follow storage order) and a
// broker.TopicHook whose LoadTopic recovers the next index. Wiring:
//
//	em, err := entrymeta.Enable(b, cfg.BrokerEntryMetadataInterceptors)
//
// # Index recovery
//
// At load the next index is one past the larger of the index in the last
// stored entry's block and the index recorded in the managed ledger's
// info (property "index", written with every info update), so the index
// runs on even when retention trimmed every ledger that held an entry.
//
// # Message ids by index
//
// An index names one entry: MessageIDByIndex finds the entry holding it
// by a binary search over the stored entries (Pulsar's
// getMessageIdByIndex also answers at entry granularity). Entries stored
// before the index interceptor was on come before every indexed one.
//
// Whether consumers receive the block is the core's business
// (brokerconf.Config.ExposeBrokerEntryMetadata and the client's
// supports_broker_entry_metadata).
package entrymeta
