package broker

// Chunked messages (docs/chunking.md). A producer with chunking on splits
// a message larger than the broker's max message size into entries that
// share a uuid, numbered chunk_id 0..num_chunks_from_msg-1. The client
// reassembles them and drops a message it did not get every chunk of, so
// on Shared and Key_Shared subscriptions, where entries are spread over
// consumers, every chunk of one message must reach the consumer that got
// its first chunk. Exclusive and Failover have a single active consumer
// and need nothing.

// chunkInfo is the chunking metadata of an entry.
type chunkInfo struct {
	uuid string
	id   int32 // chunk_id
	num  int32 // num_chunks_from_msg; > 1 for a chunk
}

func (ci chunkInfo) isChunk() bool { return ci.num > 1 }

// pickFor chooses the consumer for pe: pickJoined's choice (none while
// the subscription is blocked on unacked messages), except that a chunk after
// the first goes to the consumer holding the first one while it is
// attached, whatever its permits or unacked count (a chunked message is
// one message to the client; waiting could stall it behind messages that
// need the same consumer's queue to drain).
func (s *subscription) pickFor(pe *pendingEntry) *consumer {
	if pe.chunk.isChunk() && pe.chunk.id > 0 && (s.typ == SubShared || s.typ == SubKeyShared) {
		if c := s.chunkOwner[pe.chunk.uuid]; c != nil && !c.closed {
			return c
		}
	}
	return s.pickJoined(pe)
}

// noteChunk records which consumer a chunk went to: the first chunk
// (re)assigns the message, the last one ends the assignment.
func (s *subscription) noteChunk(c *consumer, pe *pendingEntry) {
	if !pe.chunk.isChunk() || (s.typ != SubShared && s.typ != SubKeyShared) {
		return
	}
	switch {
	case pe.chunk.id >= pe.chunk.num-1:
		delete(s.chunkOwner, pe.chunk.uuid)
	case pe.chunk.id == 0:
		if s.chunkOwner == nil {
			s.chunkOwner = make(map[string]*consumer)
		}
		s.chunkOwner[pe.chunk.uuid] = c
	}
}

// forgetChunksOf drops the assignments to a consumer that left; its
// chunks went back to the replay set, where the first chunk, being
// earliest, is assigned again before the others.
func (s *subscription) forgetChunksOf(c *consumer) {
	for u, o := range s.chunkOwner {
		if o == c {
			delete(s.chunkOwner, u)
		}
	}
}
