package clientcli

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/magnetar-mq/magnetar/pulsarclient"
)

type clientFlags struct {
	url     string
	timeout time.Duration
}

func (c *clientFlags) register(cmd *cobra.Command) {
	cmd.PersistentFlags().StringVar(&c.url, "url", "pulsar://localhost:6650", "service URL (pulsar://host:port, pulsar+ssl://host:port or http://host:port)")
	cmd.PersistentFlags().DurationVar(&c.timeout, "operation-timeout", 30*time.Second, "client operation timeout")
}

func (c *clientFlags) open() (*pulsarclient.Client, error) {
	return pulsarclient.NewClient(pulsarclient.ClientOptions{URL: c.url, OperationTimeout: c.timeout,
		ConnectionTimeout: 10 * time.Second})
}

// parseProps turns k=v pairs into a map.
func parseProps(kvs []string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	m := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("property %q: want key=value", kv)
		}
		m[k] = v
	}
	return m, nil
}

// NewCommand builds `magnetar client` with produce and consume.
func NewCommand() *cobra.Command {
	var cf clientFlags
	client := &cobra.Command{
		Use:   "client",
		Short: "Produce and consume messages from the command line (like pulsar-client)",
	}
	cf.register(client)
	client.AddCommand(produceCmd(&cf), consumeCmd(&cf))
	return client
}

// produce is what the flags of `client produce` fill.
type produce struct {
	cf                     *clientFlags
	messages, files, props []string
	separator, key, typ    string
	num                    int
	rate                   float64
	noBatching, chunking   bool
}

func produceCmd(cf *clientFlags) *cobra.Command {
	p := &produce{cf: cf}
	c := &cobra.Command{
		Use:   "produce TOPIC (-m MESSAGE ... | -f FILE ...)",
		Short: "Send messages given as arguments or files",
		Long: `Sends each message (-m, split at --separator) and each file's content (-f)
as one message, the whole list --num times. Prints the message ids.`,
		Args: cobra.ExactArgs(1),
		RunE: p.run,
	}
	fl := c.Flags()
	fl.StringArrayVarP(&p.messages, "messages", "m", nil, "message(s) to send; split at --separator")
	fl.StringArrayVarP(&p.files, "files", "f", nil, "file(s) whose content to send, one message each")
	fl.StringVarP(&p.separator, "separator", "s", ",", "separator of messages in -m (empty: do not split)")
	fl.IntVarP(&p.num, "num-produce", "n", 1, "send the messages this many times")
	fl.Float64VarP(&p.rate, "rate", "r", 0, "messages per second (0: as fast as possible)")
	fl.StringVarP(&p.key, "key", "k", "", "partitioning/ordering key of every message")
	fl.StringArrayVarP(&p.props, "properties", "p", nil, "message property key=value (repeatable)")
	fl.StringVar(&p.typ, "type", "bytes", "value schema: bytes or string")
	fl.BoolVar(&p.noBatching, "disable-batching", false, "send every message in its own entry")
	fl.BoolVarP(&p.chunking, "chunking", "c", false, "split messages larger than the broker's limit into chunks")
	return c
}

// payloads are the messages to send, once.
func (p *produce) payloads() ([][]byte, error) {
	var payloads [][]byte
	for _, m := range p.messages {
		if p.separator == "" {
			payloads = append(payloads, []byte(m))
			continue
		}
		for _, part := range strings.Split(m, p.separator) {
			payloads = append(payloads, []byte(part))
		}
	}
	for _, f := range p.files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		payloads = append(payloads, b)
	}
	if len(payloads) == 0 {
		return nil, errors.New("nothing to send: give -m MESSAGE or -f FILE")
	}
	if p.num < 1 {
		return nil, fmt.Errorf("--num %d: want >= 1", p.num)
	}
	return payloads, nil
}

func (p *produce) options(topic string) (pulsarclient.ProducerOptions, error) {
	opts := pulsarclient.ProducerOptions{Topic: topic, DisableBatching: p.noBatching || p.chunking, EnableChunking: p.chunking}
	switch p.typ {
	case "bytes":
	case "string":
		opts.Schema = pulsarclient.NewStringSchema()
	default:
		return opts, fmt.Errorf("--type %q: want bytes or string", p.typ)
	}
	return opts, nil
}

func (p *produce) run(cmd *cobra.Command, args []string) error {
	payloads, err := p.payloads()
	if err != nil {
		return err
	}
	properties, err := parseProps(p.props)
	if err != nil {
		return err
	}
	opts, err := p.options(args[0])
	if err != nil {
		return err
	}
	cl, err := p.cf.open()
	if err != nil {
		return err
	}
	defer cl.Close()
	prod, err := cl.CreateProducer(opts)
	if err != nil {
		return err
	}
	defer prod.Close()
	sent, err := p.send(commandContext(cmd), prod, payloads, properties, cmd.OutOrStdout())
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "%d messages produced\n", sent)
	return nil
}

// send sends the payloads --num times at --rate, printing each id.
func (p *produce) send(ctx context.Context, prod *pulsarclient.Producer, payloads [][]byte, properties map[string]string, w io.Writer) (int, error) {
	var tick <-chan time.Time
	if p.rate > 0 {
		tk := time.NewTicker(time.Duration(float64(time.Second) / p.rate))
		defer tk.Stop()
		tick = tk.C
	}
	sent := 0
	for range p.num {
		for _, pl := range payloads {
			if tick != nil {
				select {
				case <-tick:
				case <-ctx.Done():
					return sent, ctx.Err()
				}
			}
			m := &pulsarclient.ProducerMessage{Key: p.key, Properties: properties}
			if p.typ == "string" {
				m.Value = string(pl)
			} else {
				m.Payload = pl
			}
			id, err := prod.Send(ctx, m)
			if err != nil {
				return sent, fmt.Errorf("after %d messages: %w", sent, err)
			}
			sent++
			fmt.Fprintln(w, id.String())
		}
	}
	return sent, nil
}

// commandContext is cmd's context (Background when it has none).
func commandContext(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}

// ConsumedMessage is one received message as --output json prints it.
type ConsumedMessage struct {
	ID          string            `json:"id"`
	Key         string            `json:"key,omitempty"`
	Properties  map[string]string `json:"properties,omitempty"`
	PublishTime time.Time         `json:"publishTime"`
	Producer    string            `json:"producer"`
	Redelivery  uint32            `json:"redeliveryCount,omitempty"`
	Payload     []byte            `json:"payload"`        // base64
	Text        string            `json:"text,omitempty"` // the payload when it is UTF-8
}

// consume is what the flags of `client consume` fill.
type consume struct {
	cf                            *clientFlags
	sub, subType, initial, output string
	num                           int
	noAck                         bool
}

func consumeCmd(cf *clientFlags) *cobra.Command {
	o := &consume{cf: cf}
	c := &cobra.Command{
		Use:   "consume TOPIC -s SUBSCRIPTION",
		Short: "Receive messages and print them (text, hex or JSON)",
		Long: `Subscribes and prints --num messages (0: until interrupted), acknowledging
each unless --no-ack. Output: text (payload as text), hex (a hex dump of the
payload) or json (one object per message with id, key, properties,
publish time and payload).`,
		Args: cobra.ExactArgs(1),
		RunE: o.run,
	}
	fl := c.Flags()
	fl.StringVarP(&o.sub, "subscription-name", "s", "", "subscription (required)")
	fl.StringVarP(&o.subType, "subscription-type", "t", "Exclusive", "Exclusive, Shared, Failover or Key_Shared")
	fl.StringVarP(&o.initial, "subscription-position", "p", "Latest", "where a new subscription starts: Latest or Earliest")
	fl.IntVarP(&o.num, "num-messages", "n", 1, "messages to receive (0: until interrupted)")
	fl.StringVarP(&o.output, "output", "o", "text", "text, hex or json")
	fl.BoolVar(&o.noAck, "no-ack", false, "do not acknowledge (the messages stay in the backlog)")
	return c
}

// options checks the flags and returns the consumer's options.
func (o *consume) options(topic string) (pulsarclient.ConsumerOptions, error) {
	types := map[string]pulsarclient.SubscriptionType{"exclusive": pulsarclient.Exclusive, "shared": pulsarclient.Shared,
		"failover": pulsarclient.Failover, "key_shared": pulsarclient.KeyShared}
	st, ok := types[strings.ToLower(o.subType)]
	if !ok {
		return pulsarclient.ConsumerOptions{}, fmt.Errorf("--subscription-type %q: want Exclusive, Shared, Failover or Key_Shared", o.subType)
	}
	pos := pulsarclient.SubscriptionPositionLatest
	switch strings.ToLower(o.initial) {
	case "latest":
	case "earliest":
		pos = pulsarclient.SubscriptionPositionEarliest
	default:
		return pulsarclient.ConsumerOptions{}, fmt.Errorf("--subscription-position %q: want Latest or Earliest", o.initial)
	}
	switch o.output {
	case "text", "hex", "json":
	default:
		return pulsarclient.ConsumerOptions{}, fmt.Errorf("--output %q: want text, hex or json", o.output)
	}
	if o.sub == "" {
		return pulsarclient.ConsumerOptions{}, errors.New("--subscription-name is required")
	}
	return pulsarclient.ConsumerOptions{Topic: topic, SubscriptionName: o.sub, Type: st,
		SubscriptionInitialPosition: pos, AckWithResponse: true}, nil
}

func (o *consume) run(cmd *cobra.Command, args []string) error {
	opts, err := o.options(args[0])
	if err != nil {
		return err
	}
	cl, err := o.cf.open()
	if err != nil {
		return err
	}
	defer cl.Close()
	cons, err := cl.Subscribe(opts)
	if err != nil {
		return err
	}
	defer cons.Close()
	ctx, stop := signal.NotifyContext(commandContext(cmd), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	w := cmd.OutOrStdout()
	for got := 0; o.num == 0 || got < o.num; got++ {
		m, err := cons.Receive(ctx)
		if err != nil {
			if ctx.Err() != nil && o.num == 0 {
				return nil // interrupted
			}
			return fmt.Errorf("after %d messages: %w", got, err)
		}
		if err := printMessage(w, m, o.output); err != nil {
			return err
		}
		if !o.noAck {
			if err := cons.Ack(m); err != nil {
				return err
			}
		}
	}
	return nil
}

func printMessage(w io.Writer, m *pulsarclient.Message, output string) error {
	var err error
	switch output {
	case "json":
		cm := ConsumedMessage{ID: m.ID().String(), Key: m.Key(), Properties: m.Properties(), PublishTime: m.PublishTime().UTC(),
			Producer: m.ProducerName(), Redelivery: m.RedeliveryCount(), Payload: m.Payload()}
		if isText(m.Payload()) {
			cm.Text = string(m.Payload())
		}
		err = json.NewEncoder(w).Encode(cm)
	case "hex":
		_, err = fmt.Fprintf(w, "----- got message %s key=%q -----\n%s", m.ID(), m.Key(), hex.Dump(m.Payload()))
	default:
		_, err = fmt.Fprintf(w, "----- got message -----\nkey:[%s], properties:%v, content:%s\n", m.Key(), m.Properties(), m.Payload())
	}
	return err
}

// isText reports whether b is printable UTF-8.
func isText(b []byte) bool {
	for _, r := range string(b) {
		if r == 0xFFFD || (r < 0x20 && r != '\n' && r != '\t' && r != '\r') {
			return false
		}
	}
	return true
}
