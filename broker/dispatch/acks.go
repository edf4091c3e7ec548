package dispatch

import "github.com/magnetar-mq/magnetar/broker/storage"

// AckID is one acknowledged message id of an ACK.
type AckID struct {
	Pos storage.Position
	// AckSet acknowledges batch indexes: clear bits are acknowledged.
	AckSet    []int64
	BatchSize int
}

// Acks are acknowledgements a feature applies on behalf of the
// subscription (transactions commit their pending acks so).
type Acks struct {
	Whole   []EntryAck
	Batches []BatchAck
	// Cumulative, if set, acknowledges everything up to it.
	Cumulative *storage.Position
	// Reason names the acks in warnings ("transaction ack").
	Reason string
}

// EntryAck acknowledges a whole entry of Messages messages.
type EntryAck struct {
	Pos      storage.Position
	Messages int
}

// BatchAck acknowledges the indexes of an entry of Size messages whose
// bits are clear in AckSet (Pulsar's ack_set), Messages of them.
type BatchAck struct {
	Pos      storage.Position
	AckSet   []int64
	Size     int
	Messages int
}
