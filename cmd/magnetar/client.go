package main

// magnetar client produce|consume: a quick-test client like Pulsar's
// pulsar-client, on Magnetar's own protocol client (pulsarclient).

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
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

// newClientCmd builds `magnetar client`.
func newClientCmd() *cobra.Command {
	var cf clientFlags
	client := &cobra.Command{
		Use:   "client",
		Short: "Produce and consume messages from the command line (like pulsar-client)",
	}
	cf.register(client)
	client.AddCommand(produceCmd(&cf), consumeCmd(&cf))
	return client
}

func produceCmd(cf *clientFlags) *cobra.Command {
	var (
		messages, files, props []string
		separator, key, typ    string
		num                    int
		rate                   float64
		noBatching, chunking   bool
	)
	c := &cobra.Command{
		Use:   "produce TOPIC (-m MESSAGE ... | -f FILE ...)",
		Short: "Send messages given as arguments or files",
		Long: `Sends each message (-m, split at --separator) and each file's content (-f)
as one message, the whole list --num times. Prints the message ids.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var payloads [][]byte
			for _, m := range messages {
				if separator == "" {
					payloads = append(payloads, []byte(m))
					continue
				}
				for _, part := range strings.Split(m, separator) {
					payloads = append(payloads, []byte(part))
				}
			}
			for _, f := range files {
				b, err := os.ReadFile(f)
				if err != nil {
					return err
				}
				payloads = append(payloads, b)
			}
			if len(payloads) == 0 {
				return errors.New("nothing to send: give -m MESSAGE or -f FILE")
			}
			if num < 1 {
				return fmt.Errorf("--num %d: want >= 1", num)
			}
			properties, err := parseProps(props)
			if err != nil {
				return err
			}
			opts := pulsarclient.ProducerOptions{Topic: args[0], DisableBatching: noBatching || chunking, EnableChunking: chunking}
			switch typ {
			case "bytes":
			case "string":
				opts.Schema = pulsarclient.NewStringSchema()
			default:
				return fmt.Errorf("--type %q: want bytes or string", typ)
			}
			cl, err := cf.open()
			if err != nil {
				return err
			}
			defer cl.Close()
			p, err := cl.CreateProducer(opts)
			if err != nil {
				return err
			}
			defer p.Close()
			var tick <-chan time.Time
			if rate > 0 {
				tk := time.NewTicker(time.Duration(float64(time.Second) / rate))
				defer tk.Stop()
				tick = tk.C
			}
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			w := cmd.OutOrStdout()
			sent := 0
			for range num {
				for _, pl := range payloads {
					if tick != nil {
						select {
						case <-tick:
						case <-ctx.Done():
							return ctx.Err()
						}
					}
					m := &pulsarclient.ProducerMessage{Key: key, Properties: properties}
					if typ == "string" {
						m.Value = string(pl)
					} else {
						m.Payload = pl
					}
					id, err := p.Send(ctx, m)
					if err != nil {
						return fmt.Errorf("after %d messages: %w", sent, err)
					}
					sent++
					fmt.Fprintln(w, id.String())
				}
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "%d messages produced\n", sent)
			return nil
		},
	}
	fl := c.Flags()
	fl.StringArrayVarP(&messages, "messages", "m", nil, "message(s) to send; split at --separator")
	fl.StringArrayVarP(&files, "files", "f", nil, "file(s) whose content to send, one message each")
	fl.StringVarP(&separator, "separator", "s", ",", "separator of messages in -m (empty: do not split)")
	fl.IntVarP(&num, "num-produce", "n", 1, "send the messages this many times")
	fl.Float64VarP(&rate, "rate", "r", 0, "messages per second (0: as fast as possible)")
	fl.StringVarP(&key, "key", "k", "", "partitioning/ordering key of every message")
	fl.StringArrayVarP(&props, "properties", "p", nil, "message property key=value (repeatable)")
	fl.StringVar(&typ, "type", "bytes", "value schema: bytes or string")
	fl.BoolVar(&noBatching, "disable-batching", false, "send every message in its own entry")
	fl.BoolVarP(&chunking, "chunking", "c", false, "split messages larger than the broker's limit into chunks")
	return c
}

// consumedMessage is one received message as --output json prints it.
type consumedMessage struct {
	ID          string            `json:"id"`
	Key         string            `json:"key,omitempty"`
	Properties  map[string]string `json:"properties,omitempty"`
	PublishTime time.Time         `json:"publishTime"`
	Producer    string            `json:"producer"`
	Redelivery  uint32            `json:"redeliveryCount,omitempty"`
	Payload     []byte            `json:"payload"`        // base64
	Text        string            `json:"text,omitempty"` // the payload when it is UTF-8
}

func consumeCmd(cf *clientFlags) *cobra.Command {
	var (
		sub, subType, initial, output string
		num                           int
		noAck                         bool
	)
	c := &cobra.Command{
		Use:   "consume TOPIC -s SUBSCRIPTION",
		Short: "Receive messages and print them (text, hex or JSON)",
		Long: `Subscribes and prints --num messages (0: until interrupted), acknowledging
each unless --no-ack. Output: text (payload as text), hex (a hex dump of the
payload) or json (one object per message with id, key, properties,
publish time and payload).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			types := map[string]pulsarclient.SubscriptionType{"exclusive": pulsarclient.Exclusive, "shared": pulsarclient.Shared,
				"failover": pulsarclient.Failover, "key_shared": pulsarclient.KeyShared}
			st, ok := types[strings.ToLower(subType)]
			if !ok {
				return fmt.Errorf("--subscription-type %q: want Exclusive, Shared, Failover or Key_Shared", subType)
			}
			pos := pulsarclient.SubscriptionPositionLatest
			switch strings.ToLower(initial) {
			case "latest":
			case "earliest":
				pos = pulsarclient.SubscriptionPositionEarliest
			default:
				return fmt.Errorf("--subscription-position %q: want Latest or Earliest", initial)
			}
			switch output {
			case "text", "hex", "json":
			default:
				return fmt.Errorf("--output %q: want text, hex or json", output)
			}
			if sub == "" {
				return errors.New("--subscription-name is required")
			}
			cl, err := cf.open()
			if err != nil {
				return err
			}
			defer cl.Close()
			cons, err := cl.Subscribe(pulsarclient.ConsumerOptions{Topic: args[0], SubscriptionName: sub, Type: st,
				SubscriptionInitialPosition: pos, AckWithResponse: true})
			if err != nil {
				return err
			}
			defer cons.Close()
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			ctx, stop := signalContext(ctx)
			defer stop()
			w := cmd.OutOrStdout()
			for got := 0; num == 0 || got < num; got++ {
				m, err := cons.Receive(ctx)
				if err != nil {
					if ctx.Err() != nil && num == 0 {
						return nil // interrupted
					}
					return fmt.Errorf("after %d messages: %w", got, err)
				}
				if err := printMessage(w, m, output); err != nil {
					return err
				}
				if !noAck {
					if err := cons.Ack(m); err != nil {
						return err
					}
				}
			}
			return nil
		},
	}
	fl := c.Flags()
	fl.StringVarP(&sub, "subscription-name", "s", "", "subscription (required)")
	fl.StringVarP(&subType, "subscription-type", "t", "Exclusive", "Exclusive, Shared, Failover or Key_Shared")
	fl.StringVarP(&initial, "subscription-position", "p", "Latest", "where a new subscription starts: Latest or Earliest")
	fl.IntVarP(&num, "num-messages", "n", 1, "messages to receive (0: until interrupted)")
	fl.StringVarP(&output, "output", "o", "text", "text, hex or json")
	fl.BoolVar(&noAck, "no-ack", false, "do not acknowledge (the messages stay in the backlog)")
	return c
}

func printMessage(w io.Writer, m *pulsarclient.Message, output string) error {
	var err error
	switch output {
	case "json":
		cm := consumedMessage{ID: m.ID().String(), Key: m.Key(), Properties: m.Properties(), PublishTime: m.PublishTime().UTC(),
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
