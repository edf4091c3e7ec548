// Package ledger is the ledger client: it creates, writes, opens (with
// fencing recovery) and deletes replicated ledgers stored on bookies, with
// their metadata in a metadata.Store (docs/replication.md sections 2–5).
//
//	c, _ := ledger.NewClient(store, resolver, ledger.Options{})
//	h, _ := c.Create(ctx, ledger.CreateOptions{Ensemble: 3, WriteQuorum: 2, AckQuorum: 2, Password: pw})
//	h.AddAsync(data, func(id int64, err error) { ... })   // in-order completions
//	h.Close(ctx)                                          // CLOSED at the LAC
//	r, _ := c.Open(ctx, id)                               // recovery if not CLOSED
//	entries, _ := r.Read(ctx, 0, r.LastAddConfirmed())
//
// # Transports
//
// The client talks to bookies through BookieClient, resolved per bookie id
// by a BookieResolver. The interface uses plain types and bkproto's status
// sentinels only, so any package may implement it without importing this
// one: bookie/server.Local calls an in-process bookie directly (standalone,
// no network hop); NetResolver (netclient.go) speaks bkproto over TCP: a
// pool of pipelined connections per bookie (requests matched to answers
// by id, writes coalesced by one writer goroutine per connection), a
// deadline per request (the context's, or RequestTimeout from the
// connection's coarse clock, ticked by the loop that checks deadlines:
// no clock read per request), re-dial after a connection breaks.
//
// # Metadata
//
// One JSON record (format 1, type Metadata) per ledger at LedgerPath(id),
// e.g. /ledgers/00/0000/L0123; every mutation is a compare-and-set on the
// store version. Ids come from CreateSequential under /ledgers/idgen. State
// goes OPEN → IN_RECOVERY → CLOSED (or OPEN → CLOSED on a clean close);
// lastEntryId and length are final once CLOSED. Re-replication changes a
// finished segment only through Client.ReplaceBookie (one position, CAS,
// refused if the ledger is gone or the segment changed; the last segment
// only once CLOSED). Writable bookies register
// under /ledgers/available/<id> (AvailablePath), read-only ones under
// /ledgers/available/readonly/<id>; placement picks at random among the
// writable ones (or Options.Bookies when set, less those
// Options.ReadOnly reports).
//
// # Entries and striping
//
// Entries are framed by bkproto.AppendEntry (ledgerId, entryId, LAC,
// totalLength, CRC32C, payload); readers verify the digest and the ids.
// Entry e goes to ensemble positions (e+i) mod E for i < Qw. An add
// completes when Qa bookies of its write set acked it and every earlier
// add completed; the LAC is piggybacked in each new entry, and, with
// Options.ExplicitLACInterval, also sent with WRITE_LAC when the writer
// idles. Payloads are at most MaxEntrySize (one 5 MiB bkproto frame).
//
// AddAsync copies the payload into a fresh frame. AddWithHeadroom(buf,
// off, cb) takes a payload buf[off:] with at least EntryHeadroom (36) free
// bytes in front, writes the entry header there (putEntryHeader: the same
// bytes AppendEntry produces, digest over the same 32 header bytes and the
// payload) and sends buf[off-EntryHeadroom:] as the frame, without copying
// the payload; the caller hands that part of buf over for good (the broker
// passes large SEND frames read straight into such a buffer).
//
// # Failures
//
// A bookie error on an add (other than EFENCED/EUA, which are final)
// starts an ensemble change: replacements are chosen among writable
// bookies not in the ensemble and never failed, the new ensemble is keyed
// at LAC+1 (replacing the last key in place if equal), written by CAS only
// while the ledger is OPEN, and every pending entry whose write set holds
// a replaced position loses that ack and is resent. Completions are held
// during the change, so nothing acked is lost or reordered. A CAS conflict
// showing IN_RECOVERY/CLOSED means the writer was fenced: ErrFenced.
//
// # Recovery (Open)
//
// Exactly docs/replication.md section 5: mark IN_RECOVERY, fence-read entry -1 on the last ensemble
// and require Qw-Qa+1 answers in every write set, read forward from the
// highest LAC with fencing recovery reads (an entry exists if any copy
// verifies; the ledger ends where Qw-Qa+1 bookies of the write set have
// no such entry), re-replicate each entry found with recovery adds (Qa
// acks), then CAS to CLOSED. Anything short of a decision fails with
// ErrRecoveryFailed and leaves the ledger IN_RECOVERY for the next Open.
//
// # Reads
//
// Reads go to the write set in order; an error moves on to the next
// replica at once, and a remote replica silent for SpeculativeReadTimeout
// gets company from the next one. Range reads fetch ReadParallelism
// entries at once.
//
// # Concurrency
//
// Client, WriteHandle and ReadHandle are safe for concurrent use. A
// WriteHandle's state is guarded by mu; metadata writes by metaMu (taken
// before mu). Bookie callbacks never run user code: completions go to the
// handle's delivery goroutine, which Close waits for.
package ledger
