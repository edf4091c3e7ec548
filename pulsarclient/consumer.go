package pulsarclient

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
)

// Consumer defaults (Pulsar's).
const (
	defaultReceiverQueue = 1000
	defaultNackDelay     = time.Minute
	defaultDiscovery     = time.Minute
	// ackFlushInterval is how long individual acks are grouped before one
	// ACK frame carries them (unless AckWithResponse).
	ackFlushInterval = 10 * time.Millisecond
	maxAckGroup      = 1000
)

// DLQPolicy sends a message to a dead-letter topic instead of delivering
// it once the broker reports MaxDeliveries-1 redeliveries or more, as
// Pulsar clients do.
type DLQPolicy struct {
	// MaxDeliveries is how many times a message is delivered before it
	// goes to the dead-letter topic (> 0).
	MaxDeliveries uint32
	// DeadLetterTopic defaults to <topic>-<subscription>-DLQ.
	DeadLetterTopic string
}

// ConsumerOptions configure a consumer. One of Topic, Topics and
// TopicsPattern, and SubscriptionName are required.
type ConsumerOptions struct {
	Topic  string
	Topics []string
	// TopicsPattern is a regular expression over full topic names
	// (persistent://tenant/ns/...) of one namespace; topics created later
	// are picked up every AutoDiscoveryPeriod (default 1m).
	TopicsPattern               string
	AutoDiscoveryPeriod         time.Duration
	SubscriptionName            string
	Type                        SubscriptionType
	SubscriptionInitialPosition SubscriptionInitialPosition
	Name                        string
	Properties                  map[string]string
	// ReceiverQueueSize is the prefetch per partition (flow permits); 0
	// means 1000.
	ReceiverQueueSize int
	// NackRedeliveryDelay is how long a negatively acknowledged message
	// waits before it is redelivered; 0 means 1m.
	NackRedeliveryDelay time.Duration
	DLQ                 *DLQPolicy
	// AckWithResponse makes Ack wait until the broker confirmed the ack.
	AckWithResponse bool
	ReadCompacted   bool

	// reader settings (see CreateReader)
	nonDurable bool
	startID    *MessageID
	inclusive  bool
}

// Consumer receives from one or more topics (each partition is a separate
// subscription member). Messages of all partitions arrive on one channel.
type Consumer struct {
	cl   *Client
	opts ConsumerOptions
	ch   chan ConsumerMessage
	stop chan struct{}

	mu        sync.Mutex // guards the fields below
	parts     map[string]*partitionConsumer
	dlq       map[string]*Producer
	closed    bool
	closeOnce sync.Once
	wg        sync.WaitGroup
}

// Subscribe creates a consumer.
func (cl *Client) Subscribe(opts ConsumerOptions) (*Consumer, error) {
	if opts.SubscriptionName == "" {
		return nil, errors.New("pulsarclient: subscribe: SubscriptionName is required")
	}
	if err := pulsarproto.CheckSubscriptionName(opts.SubscriptionName); err != nil {
		return nil, fmt.Errorf("pulsarclient: subscription %q: %w", opts.SubscriptionName, err)
	}
	if opts.ReceiverQueueSize <= 0 {
		opts.ReceiverQueueSize = defaultReceiverQueue
	}
	if opts.NackRedeliveryDelay <= 0 {
		opts.NackRedeliveryDelay = defaultNackDelay
	}
	if opts.AutoDiscoveryPeriod <= 0 {
		opts.AutoDiscoveryPeriod = defaultDiscovery
	}
	if opts.DLQ != nil && opts.DLQ.MaxDeliveries == 0 {
		return nil, errors.New("pulsarclient: subscribe: DLQ.MaxDeliveries must be > 0")
	}
	// The channel holds up to a receiver queue's worth: handing messages
	// over one by one through an unbuffered channel costs a goroutine
	// switch per message.
	c := &Consumer{cl: cl, opts: opts, ch: make(chan ConsumerMessage, min(opts.ReceiverQueueSize, 1000)), stop: make(chan struct{}),
		parts: map[string]*partitionConsumer{}, dlq: map[string]*Producer{}}
	ctx := context.Background()
	var topics []string
	switch {
	case opts.TopicsPattern != "":
		re, err := regexp.Compile(opts.TopicsPattern)
		if err != nil {
			return nil, fmt.Errorf("pulsarclient: topics pattern: %w", err)
		}
		ns, err := patternNamespace(opts.TopicsPattern)
		if err != nil {
			return nil, err
		}
		if topics, err = c.matching(ctx, re, ns); err != nil {
			return nil, err
		}
		c.wg.Add(1)
		go c.discover(re, ns)
	case opts.Topic != "":
		topics = []string{opts.Topic}
	case len(opts.Topics) > 0:
		topics = opts.Topics
	default:
		return nil, errors.New("pulsarclient: subscribe: no topic")
	}
	if err := c.add(ctx, topics, true); err != nil {
		c.Close()
		return nil, err
	}
	if err := cl.track(c); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// patternNamespace returns tenant/ns of a pattern like
// persistent://tenant/ns/prefix.* (or tenant/ns/...).
func patternNamespace(p string) (string, error) {
	rest := strings.TrimPrefix(strings.TrimPrefix(p, "persistent://"), "non-persistent://")
	parts := strings.SplitN(rest, "/", 3)
	if len(parts) < 3 || strings.ContainsAny(parts[0]+parts[1], `.*+?()[]{}|\^$`) {
		return "", fmt.Errorf("pulsarclient: topics pattern %q must name its tenant and namespace literally", p)
	}
	return parts[0] + "/" + parts[1], nil
}

func (c *Consumer) matching(ctx context.Context, re *regexp.Regexp, ns string) ([]string, error) {
	all, err := c.cl.topicsOfNamespace(ctx, ns)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, t := range all {
		tn, err := pulsarproto.ParseTopicName(t)
		if err != nil {
			continue
		}
		name := tn.String()
		if tn.IsPartition() {
			name = tn.Parent().String()
		}
		if re.MatchString(name) || re.MatchString(tn.String()) {
			out = append(out, tn.String())
		}
	}
	return out, nil
}

// discover subscribes to topics that start matching the pattern.
func (c *Consumer) discover(re *regexp.Regexp, ns string) {
	defer c.wg.Done()
	t := time.NewTicker(c.opts.AutoDiscoveryPeriod)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), c.cl.opts.OperationTimeout)
		topics, err := c.matching(ctx, re, ns)
		if err == nil {
			c.add(ctx, topics, false)
		}
		cancel()
	}
}

// add subscribes to the partitions of topics not subscribed yet; expand
// asks for partitioned metadata (a pattern lists partitions already).
func (c *Consumer) add(ctx context.Context, topics []string, expand bool) error {
	for _, t := range topics {
		names := []string{t}
		if expand {
			var err error
			if names, err = c.cl.TopicPartitions(ctx, t); err != nil {
				return err
			}
		}
		for _, name := range names {
			c.mu.Lock()
			_, have := c.parts[name]
			closed := c.closed
			c.mu.Unlock()
			if have || closed {
				continue
			}
			pc, err := newPartitionConsumer(ctx, c, name)
			if err != nil {
				return err
			}
			c.mu.Lock()
			if c.closed {
				c.mu.Unlock()
				pc.close()
				return ErrClosed
			}
			c.parts[name] = pc
			c.mu.Unlock()
		}
	}
	return nil
}

// Subscription returns the subscription name.
func (c *Consumer) Subscription() string { return c.opts.SubscriptionName }

// Chan returns the channel messages arrive on (closed never; select on
// your own stop signal).
func (c *Consumer) Chan() <-chan ConsumerMessage { return c.ch }

// Receive waits for the next message.
func (c *Consumer) Receive(ctx context.Context) (*Message, error) {
	select {
	case cm := <-c.ch:
		return cm.Message, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.stop:
		return nil, ErrClosed
	}
}

func owner(m *Message) (*partitionConsumer, error) {
	if m == nil || m.owner == nil {
		return nil, errors.New("pulsarclient: message was not received by a consumer")
	}
	return m.owner, nil
}

// Ack acknowledges m. For a message of a batch the entry is acknowledged
// once every message of it was.
func (c *Consumer) Ack(m *Message) error {
	pc, err := owner(m)
	if err != nil {
		return err
	}
	return pc.ack(m)
}

// AckCumulative acknowledges m and everything before it on its
// partition (not on Shared or Key_Shared subscriptions).
func (c *Consumer) AckCumulative(m *Message) error {
	if c.opts.Type == Shared || c.opts.Type == KeyShared {
		return errors.New("pulsarclient: cumulative ack is not allowed on Shared and Key_Shared subscriptions")
	}
	pc, err := owner(m)
	if err != nil {
		return err
	}
	return pc.ackCumulative(m)
}

// Nack asks for m to be redelivered after NackRedeliveryDelay.
func (c *Consumer) Nack(m *Message) {
	if pc, err := owner(m); err == nil {
		pc.nack(m)
	}
}

// Close closes every partition consumer (pending acks are sent first).
func (c *Consumer) Close() {
	c.closeOnce.Do(func() {
		c.cl.untrack(c)
		c.mu.Lock()
		c.closed = true
		parts := c.parts
		dlq := c.dlq
		c.mu.Unlock()
		close(c.stop)
		var wg sync.WaitGroup
		for _, pc := range parts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				pc.close()
			}()
		}
		wg.Wait()
		c.wg.Wait()
		for _, p := range dlq {
			p.Close()
		}
	})
}

// dlqSend republishes m to the dead-letter topic, then acknowledges it;
// a failed send negatively acknowledges it instead.
func (c *Consumer) dlqSend(m *Message) {
	topic := c.opts.DLQ.DeadLetterTopic
	if topic == "" {
		parent := m.topic
		if tn, err := pulsarproto.ParseTopicName(m.topic); err == nil && tn.IsPartition() {
			parent = tn.Parent().String()
		}
		topic = parent + "-" + c.opts.SubscriptionName + "-DLQ"
	}
	c.mu.Lock()
	p := c.dlq[topic]
	c.mu.Unlock()
	if p == nil {
		var err error
		p, err = c.cl.CreateProducer(ProducerOptions{Topic: topic, DisableBatching: true})
		if err != nil {
			m.owner.nack(m)
			return
		}
		c.mu.Lock()
		if old := c.dlq[topic]; old != nil {
			p.Close()
			p = old
		} else {
			c.dlq[topic] = p
		}
		c.mu.Unlock()
	}
	props := make(map[string]string, len(m.props)+2)
	for k, v := range m.props {
		props[k] = v
	}
	props["REAL_TOPIC"] = m.topic
	props["ORIGIN_MESSAGE_ID"] = m.id.String()
	ctx, cancel := context.WithTimeout(context.Background(), c.cl.opts.OperationTimeout)
	defer cancel()
	if _, err := p.Send(ctx, &ProducerMessage{Payload: m.payload, Key: m.key, Properties: props, EventTime: m.eventTime}); err != nil {
		m.owner.nack(m)
		return
	}
	m.owner.ack(m)
}

// ReaderOptions configure a reader.
type ReaderOptions struct {
	Topic string
	// StartMessageID: EarliestMessageID(), LatestMessageID() or an id
	// received before (the reader starts after it unless
	// StartMessageIDInclusive).
	StartMessageID          MessageID
	StartMessageIDInclusive bool
	Name                    string
	SubscriptionName        string
	ReceiverQueueSize       int
	ReadCompacted           bool
}

// Reader reads a topic from a position without a durable subscription.
type Reader struct{ c *Consumer }

// CreateReader creates a reader (on a non-partitioned topic or one
// partition).
func (cl *Client) CreateReader(opts ReaderOptions) (*Reader, error) {
	sub := opts.SubscriptionName
	if sub == "" {
		var b [5]byte
		rand.Read(b[:])
		sub = "reader-" + hex.EncodeToString(b[:])
	}
	start := opts.StartMessageID
	c, err := cl.Subscribe(ConsumerOptions{Topic: opts.Topic, SubscriptionName: sub, Type: Exclusive, Name: opts.Name,
		ReceiverQueueSize: opts.ReceiverQueueSize, ReadCompacted: opts.ReadCompacted,
		nonDurable: true, startID: &start, inclusive: opts.StartMessageIDInclusive})
	if err != nil {
		return nil, err
	}
	return &Reader{c: c}, nil
}

// Next waits for the next message.
func (r *Reader) Next(ctx context.Context) (*Message, error) { return r.c.Receive(ctx) }

// Close closes the reader.
func (r *Reader) Close() { r.c.Close() }
