package broker

import (
	"github.com/magnetar-mq/magnetar/broker/dispatch"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Producer access modes, with Pulsar's wire values.
const (
	accessShared               = 0
	accessExclusive            = 1
	accessWaitForExclusive     = 2
	accessExclusiveWithFencing = 3
)

func accessModeName(m int32) string {
	switch m {
	case accessExclusive:
		return "Exclusive"
	case accessWaitForExclusive:
		return "WaitForExclusive"
	case accessExclusiveWithFencing:
		return "ExclusiveWithFencing"
	}
	return "Shared"
}

// producerSink is where a producer's replies go (the connection).
type producerSink interface {
	sendReceipt(producerID, seq, highest uint64, pos position)
	sendSendError(producerID, seq uint64, code int32, msg string)
	// sendDropped ends a SEND that will never be answered (its producer
	// went away while the send was held by a backlog quota): nothing is
	// written, the client re-sends it after reconnecting.
	sendDropped(producerID, seq uint64)
	// producerReady sends the deferred PRODUCER_SUCCESS of a
	// WaitForExclusive producer.
	producerReady(p *producer)
	// closeProducer sends a broker-initiated CLOSE_PRODUCER and forgets
	// the producer id on the connection.
	closeProducer(p *producer)
}

// producer is one producer attached to a topic.
type producer struct {
	id   uint64
	name string
	// remote is the cluster a replicator producer replicates from ("":
	// an ordinary producer). Deduplication of its sends uses the
	// original producer name stored in each entry.
	remote         string
	requestID      uint64
	accessMode     int32
	ready          atomic.Bool // false while a WaitForExclusive producer waits
	epoch          uint64
	sink           producerSink
	topic          *topic
	metadata       map[string]string
	address        string
	clientVersion  string
	connectedSince time.Time

	msgIn   atomic.Int64
	bytesIn atomic.Int64
	win     dispatch.Window // stats.go

	// mu orders receipts of deduplicated sends behind in-flight adds.
	mu struct {
		sync.Mutex
		inflight int
		deferred []uint64 // sequence ids of duplicates awaiting receipt
	}
}

// ReplicatorPrefix starts the names of geo-replication's cursors
// (pulsar.repl.<remote>: not subscriptions; none may be created) and
// producers (pulsar.repl.<from>--><to>: deduplicated by the original
// producer's name, exempt from required encryption); Pulsar's
// replicatorPrefix.
const ReplicatorPrefix = "pulsar.repl"

// ReplicatorOrigin returns the cluster a replicator producer comes from
// ("" for an ordinary producer).
func ReplicatorOrigin(producer string) string {
	rest, ok := strings.CutPrefix(producer, ReplicatorPrefix+".")
	if !ok {
		return ""
	}
	from, _, _ := strings.Cut(rest, "-->")
	return from
}

// dedupKey is the name deduplication tracks a send under: the
// producer's, or for a replicator producer the original producer's name
// in the entry's metadata (so a resend after a replicator restart is
// recognised whatever connection carried it first).
func (p *producer) dedupKey(e *Entry) string {
	if p.remote == "" {
		return p.name
	}
	md := e.Meta()
	if md == nil || len(md.ProducerName) == 0 {
		return p.name
	}
	if md.HasMarkerType {
		return "" // markers skip deduplication
	}
	return string(md.ProducerName)
}

// persisted is the AddEntry callback path of one send.
func (p *producer) persisted(seq, highest uint64, pos position) {
	p.sink.sendReceipt(p.id, seq, highest, pos)
	p.addDone()
}

// addDone ends one in-flight add (persisted or failed) and answers the
// duplicates that waited for it.
func (p *producer) addDone() {
	p.mu.Lock()
	p.mu.inflight--
	var flush []uint64
	if p.mu.inflight == 0 && len(p.mu.deferred) > 0 {
		flush = p.mu.deferred
		p.mu.deferred = nil
	}
	p.mu.Unlock()
	for _, s := range flush {
		p.sink.sendReceipt(p.id, s, 0, dupPosition)
	}
}

// dupPosition is the message id Pulsar returns for a dropped duplicate.
var dupPosition = position{LedgerID: -1, EntryID: -1}

// duplicate answers a send dropped by deduplication, after any in-flight
// sends of the same producer.
func (p *producer) duplicate(seq uint64) {
	p.mu.Lock()
	if p.mu.inflight > 0 {
		p.mu.deferred = append(p.mu.deferred, seq)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	p.sink.sendReceipt(p.id, seq, 0, dupPosition)
}
