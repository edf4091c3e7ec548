package broker

import (
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// Slow commands off the reader.
//
// A command that may load a topic or wait for the metadata store
// (PRODUCER, SUBSCRIBE, UNSUBSCRIBE, LOOKUP, PARTITIONED_METADATA,
// GET_TOPICS_OF_NAMESPACE, and their authorization) runs on a goroutine
// of its own, so the reader goes on with the next frame: a PING is
// answered while topics load, and one slow load does not hold up the
// other topics of the connection. Answers carry the request id, so they
// may come in any order. What keeps the protocol's per-id order is the
// pending op, Pulsar's producer and consumer futures by another name:
//
//   - A PRODUCER or SUBSCRIBE registers a pending op under its producer
//     (consumer) id before the reader reads on, and the op is removed
//     only once its answer is queued. A second PRODUCER (SUBSCRIBE) for
//     an id whose creation is pending is answered ServiceNotReady,
//     "... is already present on the connection" (the client retries),
//     as Pulsar does.
//   - Any other command naming that id (SEND, FLOW, ACK, SEEK, ...)
//     waits on the reader for the op to end, then runs as it would have
//     when everything ran in frame order: a SEND right behind its
//     PRODUCER is published after PRODUCER_SUCCESS was queued, never
//     before and never dropped (Pulsar closes the connection instead).
//     Clients send these only after the answer, so the wait is a
//     pipelining client's.
//   - CLOSE_PRODUCER (CLOSE_CONSUMER) for an id whose creation is pending
//     cancels it, as Pulsar completes the future exceptionally: the close
//     is answered SUCCESS at once, and the creation, when it gets there,
//     detaches what it attached and answers its request with an error.
//   - UNSUBSCRIBE (it deletes a cursor) is a pending op on its consumer
//     id that cannot be cancelled: a CLOSE_CONSUMER waits for it.
//
// At most maxConnOps ops run at once per connection: the reader waits
// for a free slot, so TCP pushes back on a client that sends more, and
// one client cannot start an unbounded number of loads. A goroutine
// exists only while its op runs. A closing connection waits for its ops
// (each bounded by requestTimeout) before it detaches its producers and
// consumers, so an op never attaches anything to a cleaned-up
// connection.

// maxConnOps bounds the slow commands in flight on one connection.
var maxConnOps = 128 // a variable for tests

// pendingOp is a PRODUCER, SUBSCRIBE or UNSUBSCRIBE in flight for one
// producer or consumer id. Its fields other than done are guarded by
// conn.mu.
type pendingOp struct {
	done chan struct{} // closed once the op's answer is queued
	// cancellable: a creation not yet past its commit point; a CLOSE_*
	// then cancels it instead of waiting.
	cancellable bool
	cancelled   bool
}

// errClosedWhileCreating answers a creation that a CLOSE_PRODUCER or
// CLOSE_CONSUMER cancelled (Pulsar: "Closed producer before creation was
// complete").
const errClosedWhileCreating = "closed before its creation was complete"

// goAsync runs f on a goroutine of its own once one of the connection's
// op slots is free; the reader waits for the slot, never for f.
func (c *conn) goAsync(f func()) {
	c.ops <- struct{}{}
	c.opsWG.Add(1)
	go func() {
		defer func() {
			<-c.ops
			c.opsWG.Done()
		}()
		f()
	}()
}

// beginOp registers a pending op for id in *pending (reader only). A
// creation (cancellable) while another creation for id is pending is
// answered ServiceNotReady and gets nil; otherwise the op pending for id
// is waited for first.
func (c *conn) beginOp(pending *map[uint64]*pendingOp, id, requestID uint64, what string, cancellable bool) *pendingOp {
	for {
		c.mu.Lock()
		old := (*pending)[id]
		if old == nil {
			if *pending == nil {
				*pending = make(map[uint64]*pendingOp)
			}
			op := &pendingOp{done: make(chan struct{}), cancellable: cancellable}
			(*pending)[id] = op
			c.mu.Unlock()
			return op
		}
		if old.cancellable && cancellable {
			c.mu.Unlock()
			c.sendError(requestID, codeServiceNotReady, what+" is already present on the connection")
			return nil
		}
		c.mu.Unlock()
		<-old.done
	}
}

// endOp removes op (its answer queued) and wakes whoever waits for it.
func (c *conn) endOp(pending *map[uint64]*pendingOp, id uint64, op *pendingOp) {
	c.mu.Lock()
	if (*pending)[id] == op {
		delete(*pending, id)
	}
	c.mu.Unlock()
	close(op.done)
}

// awaitOp waits until no op is pending for id in *pending (reader only:
// only the reader registers ops, so none is registered meanwhile).
func (c *conn) awaitOp(pending *map[uint64]*pendingOp, id uint64) {
	c.mu.Lock()
	op := (*pending)[id]
	c.mu.Unlock()
	if op != nil {
		<-op.done
	}
}

// cancelOp cancels the pending creation for id and reports true; an op
// that cannot be cancelled is waited for, and false returned.
func (c *conn) cancelOp(pending *map[uint64]*pendingOp, id uint64) bool {
	c.mu.Lock()
	op := (*pending)[id]
	if op != nil && op.cancellable {
		op.cancelled = true
		c.mu.Unlock()
		return true
	}
	c.mu.Unlock()
	if op != nil {
		<-op.done
	}
	return false
}

// commitOp ends op's cancellable stretch and reports whether it was
// cancelled; attached runs under conn.mu with that answer (it may update
// the connection's maps accordingly).
func (c *conn) commitOp(op *pendingOp, attached func(cancelled bool)) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	op.cancellable = false
	attached(op.cancelled)
	return op.cancelled
}

// handleSlow starts a slow command (reader only). f.Cmd is the decoder's
// and is reset by the next frame, so the op keeps the command's own
// message (decoded afresh for every frame); authorization (deniedSlow)
// runs on the op too.
func (c *conn) handleSlow(f *pulsarproto.Frame) {
	cmd := f.Cmd
	own := slowCmd{typ: f.Type}
	switch f.Type {
	case pb.BaseCommand_LOOKUP:
		m := cmd.LookupTopic
		if m == nil {
			return
		}
		own.set = func(bc *pb.BaseCommand) { bc.LookupTopic = m }
		c.goAsync(func() {
			if !c.deniedSlow(own) {
				c.handleLookup(m)
			}
		})
	case pb.BaseCommand_PARTITIONED_METADATA:
		m := cmd.PartitionMetadata
		if m == nil {
			return
		}
		own.set = func(bc *pb.BaseCommand) { bc.PartitionMetadata = m }
		c.goAsync(func() {
			if !c.deniedSlow(own) {
				c.handlePartitionedMetadata(m)
			}
		})
	case pb.BaseCommand_GET_TOPICS_OF_NAMESPACE:
		m := cmd.GetTopicsOfNamespace
		if m == nil {
			return
		}
		own.set = func(bc *pb.BaseCommand) { bc.GetTopicsOfNamespace = m }
		c.goAsync(func() {
			if !c.deniedSlow(own) {
				c.handleGetTopicsOfNamespace(m)
			}
		})
	case pb.BaseCommand_PRODUCER:
		m := cmd.Producer
		if m == nil {
			return
		}
		own.set = func(bc *pb.BaseCommand) { bc.Producer = m }
		pid := m.GetProducerId()
		op := c.beginOp(&c.mu.pendingProducers, pid, m.GetRequestId(), "Producer", true)
		if op == nil {
			return
		}
		c.goAsync(func() {
			defer c.endOp(&c.mu.pendingProducers, pid, op)
			if !c.deniedSlow(own) {
				c.handleProducer(m, op)
			}
		})
	case pb.BaseCommand_SUBSCRIBE:
		m := cmd.Subscribe
		if m == nil {
			return
		}
		own.set = func(bc *pb.BaseCommand) { bc.Subscribe = m }
		cid := m.GetConsumerId()
		op := c.beginOp(&c.mu.pendingConsumers, cid, m.GetRequestId(), "Consumer", true)
		if op == nil {
			return
		}
		c.goAsync(func() {
			defer c.endOp(&c.mu.pendingConsumers, cid, op)
			if !c.deniedSlow(own) {
				c.handleSubscribe(m, op)
			}
		})
	case pb.BaseCommand_UNSUBSCRIBE:
		m := cmd.Unsubscribe
		if m == nil {
			return
		}
		cid := m.GetConsumerId()
		op := c.beginOp(&c.mu.pendingConsumers, cid, m.GetRequestId(), "Consumer", false)
		if op == nil {
			return
		}
		c.goAsync(func() {
			defer c.endOp(&c.mu.pendingConsumers, cid, op)
			c.handleUnsubscribe(m)
		})
	}
}

// slowCmd is a slow command as its op's authorization sees it: the frame
// around the command's own message is built only when an authorizer
// decides (a BaseCommand is ~1 KiB, and a live topic costs four slow
// commands: LOOKUP, PARTITIONED_METADATA, SUBSCRIBE, PRODUCER).
type slowCmd struct {
	typ pb.BaseCommand_Type
	set func(*pb.BaseCommand) // puts the message in its field
}

// deniedSlow is denied for a slow command.
func (c *conn) deniedSlow(s slowCmd) bool {
	if c.b.ext.access == nil || !c.b.authorizing() {
		return false // denied's own answer, without building the frame
	}
	cmd := &pb.BaseCommand{Type: s.typ.Enum()}
	s.set(cmd)
	return c.denied(&pulsarproto.Frame{Type: s.typ, Cmd: cmd}, nil)
}
