package pulsarclient

import (
	"context"
	"fmt"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// EntryProducerOptions configure an EntryProducer.
type EntryProducerOptions struct {
	Topic string
	Name  string
	// Receipt is called for every SEND_RECEIPT, in order, on the
	// connection's reader goroutine (it may block: the connection then
	// stops reading).
	Receipt func(sequenceID uint64, ledger, entry int64)
	// Closed is called once when the producer ends: its connection was
	// lost, the broker closed it, a send failed (SEND_ERROR) or Close.
	Closed func(err error)
}

// EntryProducer sends entries built elsewhere unchanged, one SEND per
// entry with the caller's header: the geo-replicator's producer, which
// forwards the entries a broker stored. It neither batches, compresses,
// resends nor reconnects: whatever ends the connection ends the producer
// and the caller starts again with a new one.
type EntryProducer struct {
	opts EntryProducerOptions
	cnx  *conn
	id   uint64
	once sync.Once
}

// CreateEntryProducer looks the topic up (following redirects) and
// creates the producer there.
func (cl *Client) CreateEntryProducer(ctx context.Context, opts EntryProducerOptions) (*EntryProducer, error) {
	c, err := cl.lookup(ctx, opts.Topic)
	if err != nil {
		return nil, err
	}
	ep := &EntryProducer{opts: opts, cnx: c, id: cl.id()}
	if !c.addProducer(ep.id, ep) {
		return nil, ErrConnectionClosed
	}
	rid := cl.id()
	_, err = c.request(ctx, rid, &pb.BaseCommand{Type: pb.BaseCommand_PRODUCER.Enum(), Producer: &pb.CommandProducer{
		Topic: proto.String(opts.Topic), ProducerId: proto.Uint64(ep.id), RequestId: proto.Uint64(rid),
		ProducerName: proto.String(opts.Name), UserProvidedProducerName: proto.Bool(true)}})
	if err != nil {
		c.removeProducer(ep.id)
		return nil, fmt.Errorf("pulsarclient: producer on %s: %w", opts.Topic, err)
	}
	return ep, nil
}

// Addr is the broker URL the producer is connected to.
func (ep *EntryProducer) Addr() string { return ep.cnx.logical }

// Send queues one SEND of entry (a complete payload section) with h (its
// ProducerID is set here); queued frames are written in order, coalesced.
func (ep *EntryProducer) Send(h *pulsarproto.SendHeader, entry []byte) error {
	h.ProducerID = ep.id
	if !ep.cnx.send(pulsarproto.AppendSend(make([]byte, 0, 64+len(entry)), h, entry)) {
		return ErrConnectionClosed
	}
	return nil
}

func (ep *EntryProducer) end(err error) {
	ep.once.Do(func() {
		ep.cnx.removeProducer(ep.id)
		if ep.opts.Closed != nil {
			ep.opts.Closed(err)
		}
	})
}

// Close ends the producer (CLOSE_PRODUCER, not waited for); Closed gets
// err.
func (ep *EntryProducer) Close(err error) {
	ep.cnx.sendCmd(&pb.BaseCommand{Type: pb.BaseCommand_CLOSE_PRODUCER.Enum(), CloseProducer: &pb.CommandCloseProducer{
		ProducerId: proto.Uint64(ep.id), RequestId: proto.Uint64(ep.cnx.cl.id())}})
	ep.end(err)
}

func (ep *EntryProducer) receipt(seq, _ uint64, id MessageID) {
	if ep.opts.Receipt != nil {
		ep.opts.Receipt(seq, id.Ledger, id.Entry)
	}
}

func (ep *EntryProducer) sendError(seq uint64, err error) {
	go ep.end(fmt.Errorf("pulsarclient: send of sequence id %d failed: %w", seq, err))
}

func (ep *EntryProducer) connectionClosed(c *conn) {
	c.mu.Lock()
	err := c.err
	c.mu.Unlock()
	if err == nil {
		err = fmt.Errorf("pulsarclient: %s closed the producer", c.logical)
	}
	ep.end(fmt.Errorf("%w: %w", ErrConnectionClosed, err))
}
