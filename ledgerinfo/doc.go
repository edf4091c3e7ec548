// Package ledgerinfo reads a persistent topic's managed ledger for the
// admin API: Pulsar's internal-info (ManagedLedgerInfo) and the message
// id of a point in time (messageid/{timestamp}).
//
// Internal-info is what the ledger's metadata nodes hold, in Pulsar's
// JSON (ManagedLedgerInfo): the info node's version and properties, the
// ledgers as recorded (an open ledger's entries and size are recorded
// only when it closes, so they are absent from its row, as in Pulsar),
// the terminated position of a terminated topic, and per durable cursor
// its node version, cursor ledger (-1: none yet), mark-delete position,
// the individually deleted ranges beyond it as (from, to] pairs, and
// the mark-delete properties (Magnetar keeps none: {}). The metadata
// store keeps no node times, so creationDate and modificationDate are
// empty.
//
// The message id of a timestamp is found as Pulsar's asyncFindPosition
// finds it: a binary search over the ledgers' entries by entry time (the
// broker timestamp of the broker entry metadata when present, else the
// publish time; times are taken not to decrease), answering the first
// entry at or after the timestamp; the first ledger's entry 0 when every
// entry is later; the position after the last entry when every entry is
// earlier; and nothing (404) when the ledger has no ledgers at all.
package ledgerinfo
