package broker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"strings"
	"time"

	"github.com/magnetar-mq/magnetar/broker/dispatch"
	"github.com/magnetar-mq/magnetar/broker/selector"
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// ServerError codes (pb.ServerError values) the broker reports.
const (
	codeUnknownError         = int32(pb.ServerError_UnknownError)
	codeMetadataError        = int32(pb.ServerError_MetadataError)
	codePersistenceError     = int32(pb.ServerError_PersistenceError)
	codeConsumerBusy         = int32(pb.ServerError_ConsumerBusy)
	codeServiceNotReady      = int32(pb.ServerError_ServiceNotReady)
	codeChecksumError        = int32(pb.ServerError_ChecksumError)
	codeTopicNotFound        = int32(pb.ServerError_TopicNotFound)
	codeSubscriptionNotFound = int32(pb.ServerError_SubscriptionNotFound)
	codeConsumerNotFound     = int32(pb.ServerError_ConsumerNotFound)
	codeTopicTerminated      = int32(pb.ServerError_TopicTerminatedError)
	codeProducerBusy         = int32(pb.ServerError_ProducerBusy)
	codeInvalidTopicName     = int32(pb.ServerError_InvalidTopicName)
	codeNotAllowed           = int32(pb.ServerError_NotAllowedError)
	codeProducerFenced       = int32(pb.ServerError_ProducerFenced)
)

// activeNotifyDelay is how long after SUBSCRIBE's SUCCESS a Failover
// consumer is told whether it is active.
const activeNotifyDelay = 100 * time.Millisecond

// reconnectGrace is how long after SUBSCRIBE's SUCCESS nothing is
// dispatched to a consumer that re-subscribes after the broker closed it
// on the same connection (an unload). The Go client clears its receive
// queue once it has processed SUCCESS, and a zero-queue consumer sends its
// FLOW while still reconnecting: a message dispatched between SUCCESS and
// the clear is dropped by the client and, held as pending by a live
// consumer, never redelivered. Pulsar avoids it by accident: the topic
// reload makes the subscribe slow and the early FLOW finds no consumer.
const reconnectGrace = 100 * time.Millisecond

// ourProtocolVersion is the protocol version the broker speaks.
const ourProtocolVersion = 20

// serverVersion is reported in CONNECTED.
const serverVersion = "Magnetar"

// requestTimeout bounds the storage and metadata work of one request.
const requestTimeout = 30 * time.Second

// handle runs one frame. A non-nil error closes the connection.
func (c *conn) handle(f pulsarproto.Frame) error {
	cmd := f.Cmd
	if !c.connected {
		if f.Type != pb.BaseCommand_CONNECT || cmd.Connect == nil {
			return fmt.Errorf("%w: %s before CONNECT", ErrProtocol, f.Type)
		}
		return c.handleConnect(cmd.Connect)
	}
	switch f.Type {
	case pb.BaseCommand_LOOKUP, pb.BaseCommand_PARTITIONED_METADATA, pb.BaseCommand_GET_TOPICS_OF_NAMESPACE,
		pb.BaseCommand_PRODUCER, pb.BaseCommand_SUBSCRIBE, pb.BaseCommand_UNSUBSCRIBE:
		c.handleSlow(&f) // off the reader, authorization included (connops.go)
		return nil
	}
	switch f.Type {
	case pb.BaseCommand_SEND:
		if cmd.Send == nil {
			return fmt.Errorf("%w: SEND without body", ErrProtocol)
		}
		return c.handleSend(cmd.Send, &f)
	case pb.BaseCommand_FLOW:
		if cmd.Flow != nil {
			c.handleFlow(cmd.Flow)
		}
	case pb.BaseCommand_ACK:
		if cmd.Ack != nil {
			c.handleAck(cmd.Ack)
		}
	case pb.BaseCommand_PING:
		c.sendSimple(&pb.BaseCommand{Type: pb.BaseCommand_PONG.Enum(), Pong: &pb.CommandPong{}})
	case pb.BaseCommand_PONG:
	case pb.BaseCommand_REDELIVER_UNACKNOWLEDGED_MESSAGES:
		if cmd.RedeliverUnacknowledgedMessages != nil {
			c.handleRedeliver(cmd.RedeliverUnacknowledgedMessages)
		}
	case pb.BaseCommand_SEEK:
		if cmd.Seek != nil {
			c.handleSeek(cmd.Seek)
		}
	case pb.BaseCommand_GET_LAST_MESSAGE_ID:
		if cmd.GetLastMessageId != nil {
			c.handleGetLastMessageID(cmd.GetLastMessageId)
		}
	case pb.BaseCommand_CLOSE_PRODUCER:
		if cmd.CloseProducer != nil {
			c.handleCloseProducer(cmd.CloseProducer)
		}
	case pb.BaseCommand_CLOSE_CONSUMER:
		if cmd.CloseConsumer != nil {
			c.handleCloseConsumer(cmd.CloseConsumer)
		}
	case pb.BaseCommand_CONSUMER_STATS:
		if cmd.ConsumerStats != nil {
			c.handleConsumerStats(cmd.ConsumerStats)
		}
	case pb.BaseCommand_AUTH_RESPONSE:
		if cmd.AuthResponse != nil {
			return c.handleAuthResponse(cmd.AuthResponse)
		}
	case pb.BaseCommand_CONNECT:
		return fmt.Errorf("%w: second CONNECT", ErrProtocol)
	default:
		return c.handleFeature(&f)
	}
	return nil
}

// handleFeature runs a command a feature serves (Use, Command). A
// SuperUserOnly command from a connection that is not a superuser's is
// answered with AuthorizationError and goes no further. A transaction
// command or schema command no feature serves is answered with
// NotAllowed (transactions, or the schema registry, are off); any other
// command the broker does not serve closes the connection.
func (c *conn) handleFeature(f *pulsarproto.Frame) error {
	cmd, ok := c.b.ext.commands[f.Type]
	if !ok {
		off := errTxnDisabled
		if f.Type == pb.BaseCommand_GET_SCHEMA || f.Type == pb.BaseCommand_GET_OR_CREATE_SCHEMA {
			off = errNoSchemaRegistry
		}
		if r := pulsarproto.Refusal(f.Type, f.Cmd, pb.ServerError_NotAllowedError, off.Error()); r != nil {
			c.sendSimple(r)
			return nil
		}
		return fmt.Errorf("%w: unexpected command %s", ErrProtocol, f.Type)
	}
	if c.denied(f, &cmd) {
		return nil
	}
	return cmd.Handle(Conn{c}, f.Cmd)
}

func (c *conn) sendError(requestID uint64, code int32, msg string) {
	if msg == "" {
		msg = pb.ServerError(code).String()
	}
	c.sendSimple(&pb.BaseCommand{Type: pb.BaseCommand_ERROR.Enum(), Error: &pb.CommandError{
		RequestId: &requestID, Error: pb.ServerError(code).Enum(), Message: &msg,
	}})
}

func (c *conn) sendSuccess(requestID uint64) {
	c.sendSimple(&pb.BaseCommand{Type: pb.BaseCommand_SUCCESS.Enum(), Success: &pb.CommandSuccess{RequestId: &requestID}})
}

func (c *conn) handleConnect(m *pb.CommandConnect) error {
	if err := c.authenticate(m); err != nil {
		return err
	}
	v := m.GetClientVersion()
	c.clientVersion.Store(&v)
	c.bemSupported.Store(m.GetFeatureFlags().GetSupportsBrokerEntryMetadata())
	c.connected = true
	pv := min(m.GetProtocolVersion(), ourProtocolVersion)
	c.sendSimple(&pb.BaseCommand{Type: pb.BaseCommand_CONNECTED.Enum(), Connected: &pb.CommandConnected{
		ServerVersion:   ptr(serverVersion),
		ProtocolVersion: &pv,
		MaxMessageSize:  ptr(int32(c.b.cfg.MaxMessageSize)),
		FeatureFlags:    &pb.FeatureFlags{},
	}})
	return nil
}

func (c *conn) handleSend(m *pb.CommandSend, f *pulsarproto.Frame) error {
	payload := f.Payload
	pid := m.GetProducerId()
	c.mu.Lock()
	p, op := c.mu.producers[pid], c.mu.pendingProducers[pid]
	c.mu.Unlock()
	if op != nil { // a SEND pipelined behind its PRODUCER (connops.go)
		<-op.done
		c.mu.Lock()
		p = c.mu.producers[pid]
		c.mu.Unlock()
	}
	seq := m.GetSequenceId()
	e := sendEntry(f)
	if err := parseSend(e); err != nil {
		if errors.Is(err, pulsarproto.ErrChecksum) {
			c.sendStarted()
			c.sendSendError(pid, seq, codeChecksumError, "Checksum failed on the broker")
			return nil
		}
		return fmt.Errorf("%w: SEND payload: %w", ErrProtocol, err)
	}
	if p == nil || !p.ready.Load() {
		// Pulsar closes the connection: the client never created that
		// producer here, or sends before its PRODUCER was answered (or
		// after the broker closed it); reconnecting re-creates it.
		return fmt.Errorf("%w: SEND for producer %d, which is not ready on this connection", ErrProtocol, pid)
	}
	n := int(m.GetNumMessages())
	if n < 1 {
		n = 1
	}
	c.sendStarted() // answered by exactly one sendReceipt or sendSendError
	if len(c.b.ext.admission) > 0 {
		if se := c.b.ext.admit(func(a Admission) *SendError {
			return a.AdmitSend(Topic{p.topic}, e, len(payload), p.remote != "")
		}); se != nil {
			c.sendSendError(pid, seq, int32(se.Code), se.Msg)
			return nil
		}
	}
	if err := interceptSend(c.b.ext.send, p, m, e); err != nil {
		var se *SendError
		if !errors.As(err, &se) {
			se = &SendError{Code: pb.ServerError_UnknownError, Msg: err.Error()}
		}
		c.sendSendError(pid, seq, int32(se.Code), se.Msg)
		return nil
	}
	p.topic.admit(p, seq, m.GetHighestSequenceId(), n, e)
	if d := p.topic.limits.publishThrottle(n, len(payload)); d > 0 {
		c.pauseReads(d)
	}
	return nil
}

// interceptSend runs the SendInterceptors on a SEND; a SEND in a
// transaction must come out claimed (extension.go).
func interceptSend(sends []SendInterceptor, p *producer, m *pb.CommandSend, e *Entry) error {
	for _, h := range sends {
		if err := h.InterceptSend(Producer{p}, m, e); err != nil {
			return err
		}
	}
	if (m.TxnidMostBits != nil || m.TxnidLeastBits != nil) && e.hook == nil {
		// As Pulsar's disabled transaction buffer: refused, nothing
		// stored, no buffer created.
		return &SendError{Code: pb.ServerError_NotAllowedError, Msg: errTxnDisabled.Error()}
	}
	return nil
}

// remoteHost returns the host of a "/host:port" remote address.
func remoteHost(remote string) string {
	if h, _, err := net.SplitHostPort(strings.TrimPrefix(remote, "/")); err == nil {
		return h
	}
	return remote
}

// pauseReads stops reading the connection for d (publish rate limit):
// the reader goroutine waits, so TCP pushes back on every producer of
// the connection, as Pulsar's disabled auto-read does.
func (c *conn) pauseReads(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-c.b.done:
	}
}

// The room of a large SEND frame must hold the ledger's entry header.
var _ [pulsarproto.FrameHeadroom - mledger.EntryHeadroom]struct{}

// sendEntry returns the payload of a SEND frame as an entry the broker
// owns (an Entry: the broker's from here on, never modified): a large
// frame's own buffer as is (no copy), else a copy out of the frame
// reader's reused buffer, which the next frame overwrites. The copy gets
// room in front too, so the ledger need not copy it again. The entry is
// not parsed yet (parseSend).
func sendEntry(f *pulsarproto.Frame) *Entry {
	if buf, off, ok := f.PayloadBuffer(); ok {
		return &Entry{buf: buf, off: off}
	}
	buf := make([]byte, mledger.EntryHeadroom+len(f.Payload))
	copy(buf[mledger.EntryHeadroom:], f.Payload)
	return &Entry{buf: buf, off: mledger.EntryHeadroom}
}

// parseSend checks a SEND's entry (framing and checksum) and parses its
// MessageMetadata: the one parse of the SEND path, whose later stages
// read Entry.Meta. A 0x0e02 block the client put in front is dropped:
// broker entry metadata is the broker's to write. Metadata that does not
// parse is not an error here (the entry is stored as sent).
func parseSend(e *Entry) error {
	frame, err := verifyEntry(e.Data())
	if err != nil {
		return err
	}
	if frame.BrokerEntryMetadata != nil {
		e.off += len(e.Data()) - len(frame.Body)
		frame.BrokerEntryMetadata = nil
	}
	e.frame = frame
	e.mdOK = parseMetadata(frame.Metadata, &e.md) == nil
	return nil
}

// consumer returns consumer id of the connection, nil if none, once no
// SUBSCRIBE or UNSUBSCRIBE is pending for id (reader only; connops.go).
func (c *conn) consumer(id uint64) *connConsumer {
	c.awaitOp(&c.mu.pendingConsumers, id)
	return c.attachedConsumer(id)
}

// attachedConsumer returns consumer id as it is now, pending ops or not.
func (c *conn) attachedConsumer(id uint64) *connConsumer {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.consumers[id]
}

func (c *conn) handleFlow(m *pb.CommandFlow) {
	cc := c.consumer(m.GetConsumerId())
	if cc == nil {
		return
	}
	n := int(m.GetMessagePermits())
	cc.sub.Do(func() { cc.sub.Flow(cc.c, n) })
}

func (c *conn) handleAck(m *pb.CommandAck) {
	cc := c.consumer(m.GetConsumerId())
	if cc == nil {
		if m.RequestId != nil {
			c.sendAckResponse(m.GetConsumerId(), m.GetRequestId(), codeConsumerNotFound, "Consumer not found")
		}
		return
	}
	ids := make([]AckID, 0, len(m.MessageId))
	for _, id := range m.MessageId {
		a := AckID{Pos: position{LedgerID: int64(id.GetLedgerId()), EntryID: int64(id.GetEntryId())}, BatchSize: int(id.GetBatchSize())}
		if len(id.AckSet) > 0 {
			a.AckSet = id.AckSet
		}
		ids = append(ids, a)
	}
	if len(c.b.ext.acks) > 0 {
		r := &AckRequest{Cmd: m, IDs: ids, Topic: Topic{cc.topic}, Sub: Subscription{cc.sub}, conn: c, cc: cc}
		for _, h := range c.b.ext.acks {
			if h.InterceptAck(r) {
				return
			}
		}
	}
	if m.TxnidMostBits != nil || m.TxnidLeastBits != nil {
		// No AckHook took it: transactions are off.
		if m.RequestId != nil {
			c.sendAckResponse(m.GetConsumerId(), m.GetRequestId(), codeNotAllowed, errTxnDisabled.Error())
		}
		return
	}
	cumulative := m.GetAckType() == pb.CommandAck_Cumulative
	reqID, withResp := m.GetRequestId(), m.RequestId != nil
	consumerID := m.GetConsumerId()
	ok := cc.sub.Do(func() {
		cc.sub.Ack(cc.c, cumulative, ids)
		if withResp {
			c.sendAckResponse(consumerID, reqID, 0, "")
		}
	})
	if !ok && withResp {
		c.sendAckResponse(consumerID, reqID, codeConsumerNotFound, "Consumer is closed")
	}
}

func (c *conn) sendAckResponse(consumerID, requestID uint64, code int32, msg string) {
	r := &pb.CommandAckResponse{ConsumerId: &consumerID, RequestId: &requestID}
	if msg != "" {
		r.Error = pb.ServerError(code).Enum()
		r.Message = &msg
	}
	c.sendSimple(&pb.BaseCommand{Type: pb.BaseCommand_ACK_RESPONSE.Enum(), AckResponse: r})
}

func (c *conn) handleLookup(m *pb.CommandLookupTopic) {
	rid := m.GetRequestId()
	resp := &pb.CommandLookupTopicResponse{RequestId: &rid}
	tn, err := parseTopicName(m.GetTopic())
	if err != nil {
		resp.Response = pb.CommandLookupTopicResponse_Failed.Enum()
		resp.Error = pb.ServerError_InvalidTopicName.Enum()
		resp.Message = ptr(err.Error())
	} else if own := c.b.cluster.own; own != nil {
		// The cluster answers: Connect to the owner or Redirect.
		ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
		resp = own.Lookup(ctx, tn.String(), m.GetAuthoritative())
		cancel()
		resp.RequestId = &rid
	} else if ok, err := c.b.reg.NamespaceExists(context.Background(), tn.NamespaceName()); err != nil || !ok {
		resp.Response = pb.CommandLookupTopicResponse_Failed.Enum()
		resp.Error = pb.ServerError_TopicNotFound.Enum()
		resp.Message = ptr("Namespace does not exist: " + tn.NamespaceName())
	} else {
		resp.Response = pb.CommandLookupTopicResponse_Connect.Enum()
		plain, secure := c.b.net.lookupURLs()
		resp.BrokerServiceUrl = ptr(plain)
		if secure != "" {
			resp.BrokerServiceUrlTls = ptr(secure)
		}
		resp.Authoritative = ptr(true)
		resp.ProxyThroughServiceUrl = ptr(false)
	}
	c.sendSimple(&pb.BaseCommand{Type: pb.BaseCommand_LOOKUP_RESPONSE.Enum(), LookupTopicResponse: resp})
}

func (c *conn) handlePartitionedMetadata(m *pb.CommandPartitionedTopicMetadata) {
	rid := m.GetRequestId()
	resp := &pb.CommandPartitionedTopicMetadataResponse{RequestId: &rid}
	fail := func(code pb.ServerError, msg string) {
		resp.Response = pb.CommandPartitionedTopicMetadataResponse_Failed.Enum()
		resp.Error = code.Enum()
		resp.Message = &msg
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	tn, err := parseTopicName(m.GetTopic())
	switch {
	case err != nil:
		fail(pb.ServerError_InvalidTopicName, err.Error())
	default:
		ok, err := c.b.reg.NamespaceExists(ctx, tn.NamespaceName())
		if err != nil {
			fail(pb.ServerError_MetadataError, err.Error())
			break
		}
		if !ok {
			fail(pb.ServerError_TopicNotFound, "Namespace does not exist: "+tn.NamespaceName())
			break
		}
		n := 0
		if !tn.IsPartition() {
			n, err = c.b.reg.Partitions(ctx, tn.String())
			if err != nil {
				fail(pb.ServerError_MetadataError, err.Error())
				break
			}
			if n == 0 {
				if n, err = c.b.Registry().autoCreatePartitioned(ctx, tn); isTooManyTopics(err) {
					fail(pb.ServerError_NotAllowedError, err.Error())
					break
				}
			}
		}
		resp.Partitions = ptr(uint32(n))
		resp.Response = pb.CommandPartitionedTopicMetadataResponse_Success.Enum()
	}
	c.sendSimple(&pb.BaseCommand{Type: pb.BaseCommand_PARTITIONED_METADATA_RESPONSE.Enum(), PartitionMetadataResponse: resp})
}

// kvMap returns kvs as a map, nil for none (stats show {}).
func kvMap(kvs []*pb.KeyValue) map[string]string {
	if len(kvs) == 0 {
		return nil
	}
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[kv.GetKey()] = kv.GetValue()
	}
	return m
}

// topicError maps a getTopic error to a ServerError.
func topicError(err error) (int32, string) {
	switch {
	case errors.Is(err, ErrTopicNotFound), errors.Is(err, ErrNamespaceNotFound):
		return codeTopicNotFound, err.Error()
	case errors.Is(err, ErrInvalidTopicName):
		return codeInvalidTopicName, err.Error()
	case errors.Is(err, ErrClosed):
		return codeServiceNotReady, err.Error()
	case isTooManyTopics(err):
		return codeNotAllowed, err.Error()
	}
	return codeServiceNotReady, err.Error()
}

// handleProducer runs a PRODUCER on its op's goroutine (connops.go).
func (c *conn) handleProducer(m *pb.CommandProducer, op *pendingOp) {
	rid := m.GetRequestId()
	pid := m.GetProducerId()
	tn, err := parseTopicName(m.GetTopic())
	if err != nil {
		c.sendError(rid, codeInvalidTopicName, err.Error())
		return
	}
	c.mu.Lock()
	existing := c.mu.producers[pid]
	c.mu.Unlock()
	if existing != nil {
		if existing.topic.name.String() == tn.String() {
			// A retried PRODUCER for a producer we already hold.
			c.producerSuccess(existing, rid, existing.ready.Load(), nil)
			return
		}
		c.sendError(rid, codeProducerBusy, "producer id already in use on this connection")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	t, err := c.b.getTopic(ctx, tn, true)
	if err != nil {
		code, msg := topicError(err)
		c.sendError(rid, code, msg)
		return
	}
	if se := c.b.ext.admit(func(a Admission) *SendError { return a.AdmitProducer(Topic{t}, m) }); se != nil {
		c.sendError(rid, int32(se.Code), se.Msg)
		return
	}
	if q := t.limits.quota(); q != nil {
		if se := q.AdmitProducer(); se != nil {
			c.sendError(rid, int32(se.Code), se.Msg)
			return
		}
	}
	name := m.GetProducerName()
	if name == "" {
		name = c.b.producerNames.next()
	}
	p := &producer{
		id: pid, name: name, remote: ReplicatorOrigin(name), requestID: rid, accessMode: int32(m.GetProducerAccessMode()), epoch: m.GetEpoch(),
		sink: c, topic: t, metadata: kvMap(m.Metadata), address: c.remote,
		clientVersion: *c.clientVersion.Load(), connectedSince: time.Now(),
	}
	p.win.Roll(p.connectedSince, 0, 0) // the first window starts now
	schemaVersion, code, msg, ok := c.b.ext.attachProducer(ctx, t, m)
	if !ok {
		c.sendError(rid, code, msg)
		return
	}
	c.mu.Lock()
	if c.mu.closed || op.cancelled {
		cancelled := op.cancelled
		c.mu.Unlock()
		if cancelled {
			c.sendError(rid, codeUnknownError, "Producer "+errClosedWhileCreating)
		}
		return
	}
	c.mu.producers[pid] = p
	c.mu.Unlock()
	wait, err := t.addProducer(p)
	// mine: the broker did not close p meanwhile (closeProducer).
	var mine bool
	cancelled := c.commitOp(op, func(cancelled bool) {
		mine = c.mu.producers[pid] == p
		if mine && (err != nil || cancelled) {
			delete(c.mu.producers, pid)
		}
	})
	if err == nil && (cancelled || !mine) {
		t.removeProducer(p)
		t.held.drop(heldBy(p))
		if cancelled {
			c.sendError(rid, codeUnknownError, "Producer "+errClosedWhileCreating)
		} else {
			c.sendError(rid, codeServiceNotReady, "Producer was closed by the broker while being created")
		}
		return
	}
	if err != nil {
		var pe *errProducer
		if errors.As(err, &pe) {
			c.log.Info("producer refused", "topic", t.name.String(), "producer", name, "reason", pe.msg)
			c.sendError(rid, pe.code, pe.msg)
		} else {
			c.sendError(rid, codeUnknownError, err.Error())
		}
		return
	}
	if sub := m.GetInitialSubscriptionName(); sub != "" && t.persistent() {
		if err := t.ensureSubscription(sub); err != nil {
			c.log.Warn("initial subscription", "topic", t.name.String(), "sub", sub, "err", err)
		}
	}
	c.producerSuccess(p, rid, !wait, schemaVersion)
}

// producerSuccess answers PRODUCER; schemaVersion (an AttachHook's) may
// be nil.
func (c *conn) producerSuccess(p *producer, rid uint64, ready bool, schemaVersion []byte) {
	ps := &pb.CommandProducerSuccess{
		RequestId:      &rid,
		ProducerName:   &p.name,
		LastSequenceId: ptr(p.topic.lastSequence(p.name)),
		ProducerReady:  &ready,
	}
	if schemaVersion != nil {
		ps.SchemaVersion = schemaVersion
	}
	c.sendSimple(&pb.BaseCommand{Type: pb.BaseCommand_PRODUCER_SUCCESS.Enum(), ProducerSuccess: ps})
}

// startPosition decodes a non-durable start_message_id.
func startPosition(id *pb.MessageIdData) position {
	l, e := id.GetLedgerId(), id.GetEntryId()
	switch {
	case l == math.MaxUint64 && e == math.MaxUint64:
		return posEarliest
	case l == math.MaxInt64 && e == math.MaxInt64:
		return posLatest
	}
	return position{LedgerID: int64(l), EntryID: int64(e)}
}

// handleSubscribe runs a SUBSCRIBE on its op's goroutine (connops.go).
func (c *conn) handleSubscribe(m *pb.CommandSubscribe, op *pendingOp) {
	rid := m.GetRequestId()
	cid := m.GetConsumerId()
	tn, err := parseTopicName(m.GetTopic())
	if err != nil {
		c.sendError(rid, codeInvalidTopicName, err.Error())
		return
	}
	if m.GetSubscription() == "" {
		c.sendError(rid, codeNotAllowed, "Empty subscription name")
		return
	}
	if strings.HasPrefix(m.GetSubscription(), ReplicatorPrefix+".") {
		c.sendError(rid, codeNotAllowed, "Subscription name "+m.GetSubscription()+" is reserved for replication (prefix "+ReplicatorPrefix+")")
		return
	}
	if err := pulsarproto.CheckSubscriptionName(m.GetSubscription()); err != nil {
		c.sendError(rid, codeNotAllowed, err.Error())
		return
	}
	if cc := c.attachedConsumer(cid); cc != nil {
		if cc.topic.name.String() == tn.String() && cc.sub.Name() == m.GetSubscription() {
			c.sendSuccess(rid)
			return
		}
		c.sendError(rid, codeConsumerBusy, "consumer id already in use on this connection")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	t, err := c.b.getTopic(ctx, tn, m.ForceTopicCreation == nil || m.GetForceTopicCreation())
	if err != nil {
		code, msg := topicError(err)
		c.sendError(rid, code, msg)
		return
	}
	if se := c.b.ext.admit(func(a Admission) *SendError { return a.AdmitConsumer(Topic{t}, m) }); se != nil {
		c.sendError(rid, int32(se.Code), se.Msg)
		return
	}
	if !t.limits.allowSubscribe(m.GetConsumerName() + "@" + remoteHost(c.remote)) {
		c.sendError(rid, int32(pb.ServerError_TooManyRequests), "Subscribe limited by subscribe rate limit per consumer.")
		return
	}
	if code, msg, ok := c.b.ext.attachConsumer(ctx, t, m); !ok {
		c.sendError(rid, code, msg)
		return
	}
	info := dispatch.ConsumerInfo{
		ID: cid, Name: m.GetConsumerName(), Priority: int(m.GetPriorityLevel()),
		Metadata: kvMap(m.Metadata), Address: c.remote, ClientVersion: *c.clientVersion.Load(),
	}
	c.mu.Lock()
	if c.mu.brokerClosed[cid] {
		delete(c.mu.brokerClosed, cid)
		info.HoldUntil = time.Now().Add(reconnectGrace)
	}
	c.mu.Unlock()
	req := subscribeReq{
		sub:     m.GetSubscription(),
		typ:     SubType(m.GetSubType()),
		durable: m.Durable == nil || m.GetDurable(),
		// As Pulsar: only durable subscriptions replicate their state.
		replicated: m.GetReplicateSubscriptionState() && (m.Durable == nil || m.GetDurable()),
	}
	if m.GetReadCompacted() {
		if !t.persistent() || (req.typ != SubExclusive && req.typ != SubFailover) {
			c.sendError(rid, codeNotAllowed, "Read compacted can only be used with exclusive or failover persistent subscriptions")
			return
		}
		req.readCompacted = true
	}
	if m.GetInitialPosition() == pb.CommandSubscribe_Earliest {
		req.initial = initialEarliest
	}
	if m.StartMessageId != nil && !req.durable {
		sp := startPosition(m.StartMessageId)
		req.start = &sp
	}
	if ks := m.KeySharedMeta; ks != nil && req.typ == SubKeyShared {
		req.sticky = ks.GetKeySharedMode() == pb.KeySharedMode_STICKY
		info.OutOfOrder = ks.GetAllowOutOfOrderDelivery()
		for _, r := range ks.HashRanges {
			info.Ranges = append(info.Ranges, selector.Range{Start: int(r.GetStart()), End: int(r.GetEnd())})
		}
	}
	co := dispatch.NewConsumer(info, c)
	req.consumer = co
	cc := &connConsumer{c: co, topic: t}
	c.mu.Lock()
	if c.mu.closed || op.cancelled {
		cancelled := op.cancelled
		c.mu.Unlock()
		if cancelled {
			c.sendError(rid, codeUnknownError, "Consumer "+errClosedWhileCreating)
		}
		return
	}
	c.mu.consumers[cid] = cc
	c.mu.Unlock()
	s, err := t.subscribe(req)
	// mine: the broker did not close the consumer meanwhile
	// (closeConsumer).
	var mine bool
	cancelled := c.commitOp(op, func(cancelled bool) {
		mine = c.mu.consumers[cid] == cc
		if err == nil {
			cc.sub = s
		}
		if mine && (err != nil || cancelled) {
			delete(c.mu.consumers, cid)
		}
	})
	if err != nil {
		var se *errSubscribe
		if errors.As(err, &se) {
			c.sendError(rid, se.code, se.msg)
		} else {
			c.sendError(rid, codeUnknownError, err.Error())
		}
		return
	}
	if cancelled {
		t.removeConsumer(s, co)
		c.sendError(rid, codeUnknownError, "Consumer "+errClosedWhileCreating)
		return
	}
	if !mine {
		// Its SUCCESS would follow the CLOSE_CONSUMER, which the client
		// drops before SUCCESS: it would wait on a consumer the broker
		// no longer has. An error makes it retry.
		c.sendError(rid, codeServiceNotReady, "Consumer was closed by the broker while subscribing")
		return
	}
	c.sendSuccess(rid)
	// Failover: tell the new consumer whether it is active, shortly after
	// SUCCESS: the Go client installs the consumer's handler only once it
	// has processed SUCCESS and drops ACTIVE_CONSUMER_CHANGE before that.
	if req.typ == SubFailover {
		s.Do(func() { s.ScheduleActiveNotify(co, activeNotifyDelay) })
	}
	if hold := co.HoldUntil(); !hold.IsZero() {
		time.AfterFunc(time.Until(hold), func() { s.Do(s.Dispatch) })
	}
}
