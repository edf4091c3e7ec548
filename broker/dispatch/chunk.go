package dispatch

// Chunked messages (docs/chunking.md). A producer with chunking on splits
// a message larger than the broker's max message size into entries that
// share a uuid, numbered chunk_id 0..num_chunks_from_msg-1. The client
// reassembles them and drops a message it did not get every chunk of, so
// on Shared and Key_Shared subscriptions, where entries are spread over
// consumers, every chunk of one message must reach the consumer that got
// its first chunk. Exclusive and Failover have a single active consumer
// and need nothing.

// Chunk is the chunking metadata of an entry.
type Chunk struct {
	UUID string
	ID   int32 // chunk_id
	Num  int32 // num_chunks_from_msg; > 1 for a chunk
}

func (ci Chunk) isChunk() bool { return ci.Num > 1 }

// pickFor chooses the consumer for pe: pickJoined's choice (none while
// the subscription is blocked on unacked messages), except that a chunk after
// the first goes to the consumer holding the first one while it is
// attached, whatever its permits or unacked count (a chunked message is
// one message to the client; waiting could stall it behind messages that
// need the same consumer's queue to drain).
func (s *Subscription) pickFor(pe *Entry) *Consumer {
	if pe.chunk.isChunk() && pe.chunk.ID > 0 && (s.typ == Shared || s.typ == KeyShared) {
		if c := s.chunkOwner[pe.chunk.UUID]; c != nil && !c.closed {
			return c
		}
	}
	return s.pickJoined(pe)
}

// noteChunk records which consumer a chunk went to: the first chunk
// (re)assigns the message, the last one ends the assignment.
func (s *Subscription) noteChunk(c *Consumer, pe *Entry) {
	if !pe.chunk.isChunk() || (s.typ != Shared && s.typ != KeyShared) {
		return
	}
	switch {
	case pe.chunk.ID >= pe.chunk.Num-1:
		delete(s.chunkOwner, pe.chunk.UUID)
	case pe.chunk.ID == 0:
		if s.chunkOwner == nil {
			s.chunkOwner = make(map[string]*Consumer)
		}
		s.chunkOwner[pe.chunk.UUID] = c
	}
}

// forgetChunksOf drops the assignments to a consumer that left; its
// chunks went back to the replay set, where the first chunk, being
// earliest, is assigned again before the others.
func (s *Subscription) forgetChunksOf(c *Consumer) {
	for u, o := range s.chunkOwner {
		if o == c {
			delete(s.chunkOwner, u)
		}
	}
}
