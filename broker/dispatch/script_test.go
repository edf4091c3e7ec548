package dispatch

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestDispatchScripts runs the subscription dispatch scripts in
// testdata/dispatch against one subscription over a fake cursor
// (fakes_test.go). Each command that can send prints what was sent since
// the previous command, one line per message: "<consumer> <- <entry>",
// with " redelivered=N", " ackset=<bits>" and the entry's " key=K" (read
// from the bytes sent, so a redelivery shows it re-read them) when set.
// Commands:
//
//	new type=exclusive|shared|failover|key_shared [batch=N]
//	publish [n=1] [msgs=1] [keys=k1,k2,...]   n entries (keys cycled)
//	consumer name=S [id=N]                    attach (failover: and tell)
//	flow name=S permits=P
//	ack name=S entries=E,... [cumulative] [ackset=BITS size=N]
//	nack name=S entries=E,...
//	close name=S                              the consumer leaves
//	seek entry=E                              seek and disconnect everyone
//	trim entries=E,...                        storage loses these entries
//	wake                                      new entries were persisted
//	state                                     counters, flags, cursor
func TestDispatchScripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		var (
			s     *Subscription
			cur   *fakeCursor
			sink  *recSink
			typ   Type
			cs    map[string]*Consumer
			names map[uint64]string
			order []string
		)
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			arg := func(k, def string) string {
				if !td.HasArg(k) {
					return def
				}
				var v string
				td.ScanArgs(t, k, &v)
				return v
			}
			num := func(k string, def int) int {
				n, err := strconv.Atoi(arg(k, strconv.Itoa(def)))
				if err != nil {
					td.Fatalf(t, "%s: %v", k, err)
				}
				return n
			}
			entries := func() []position {
				var ps []position
				for _, f := range strings.Split(arg("entries", ""), ",") {
					e, err := strconv.ParseInt(f, 10, 64)
					if err != nil {
						td.Fatalf(t, "entries: %v", err)
					}
					ps = append(ps, pos(e))
				}
				return ps
			}
			named := func() *Consumer {
				c := cs[arg("name", "")]
				if c == nil {
					td.Fatalf(t, "no consumer %q", arg("name", ""))
				}
				return c
			}
			if td.Cmd != "new" && s == nil {
				td.Fatalf(t, "%s before new", td.Cmd)
			}
			switch td.Cmd {
			case "new":
				types := map[string]Type{"exclusive": Exclusive, "shared": Shared, "failover": Failover, "key_shared": KeyShared}
				var ok bool
				if typ, ok = types[arg("type", "")]; !ok {
					td.Fatalf(t, "type %q", arg("type", ""))
				}
				cur, sink = newFakeCursor(), newRecSink()
				cs, names, order = map[string]*Consumer{}, map[uint64]string{}, nil
				s = newSubscriptionForScript(t, typ, cur, num("batch", 10))
				return "ok"
			case "publish":
				keys := strings.Split(arg("keys", ""), ",")
				first := len(cur.entries)
				for i := range num("n", 1) {
					cur.add(fakeEntry(num("msgs", 1), keys[i%len(keys)]))
				}
				return fmt.Sprintf("entries %d..%d", first, len(cur.entries)-1)
			case "consumer":
				name := arg("name", "")
				c := newConsumer(uint64(num("id", len(cs)+1)), name, sink)
				var refused string
				s.Call(func() {
					if refused = s.AddConsumer(c, typ, false); refused == "" && typ == Failover {
						s.notifyActiveLocked(c)
					}
				})
				if refused != "" {
					return "refused: " + refused
				}
				cs[name], names[c.id] = c, name
				order = append(order, name)
			case "flow":
				c := named()
				s.Call(func() { s.Flow(c, num("permits", 0)) })
			case "ack":
				c, ps := named(), entries()
				ids := make([]AckID, len(ps))
				for i, p := range ps {
					ids[i] = AckID{Pos: p}
					if td.HasArg("ackset") {
						bits, err := strconv.ParseInt(arg("ackset", ""), 2, 64)
						if err != nil {
							td.Fatalf(t, "ackset: %v", err)
						}
						ids[i].AckSet, ids[i].BatchSize = []int64{bits}, num("size", 0)
					}
				}
				s.Call(func() { s.Ack(c, td.HasArg("cumulative"), ids) })
			case "nack":
				c, ps := named(), entries()
				s.Call(func() { s.Redeliver(c, ps) })
			case "close":
				c := named()
				s.Call(func() { s.RemoveConsumer(c) })
				delete(cs, arg("name", ""))
				order = slices.DeleteFunc(order, func(n string) bool { return n == c.name })
			case "seek":
				var err error
				s.Call(func() {
					if err = s.Seek(pos(int64(num("entry", 0))), false, 0); err == nil {
						s.DisconnectAll(true)
					}
				})
				if err != nil {
					return "error: " + err.Error()
				}
				cs, order = map[string]*Consumer{}, nil
			case "trim":
				cur.mu.Lock()
				for _, p := range entries() {
					cur.entries[p.EntryID] = nil
				}
				cur.mu.Unlock()
				return "ok"
			case "wake":
				s.Wake()
				s.sync()
			case "state":
				return scriptState(s, cur, sink, cs, order, names)
			default:
				td.Fatalf(t, "unknown command %s", td.Cmd)
			}
			return sentSince(sink, names)
		})
	})
}

func newSubscriptionForScript(t *testing.T, typ Type, cur *fakeCursor, batch int) *Subscription {
	s := testSub(t, typ, cur)
	s.batch = batchOf(batch)
	return s
}

// sentSince prints the messages sent since the last call, "ok" if none.
func sentSince(sink *recSink, names map[uint64]string) string {
	var b strings.Builder
	for _, m := range sink.take() {
		fmt.Fprintf(&b, "%s <- %d", names[m.consumer], m.pos.EntryID)
		if m.redelivered > 0 {
			fmt.Fprintf(&b, " redelivered=%d", m.redelivered)
		}
		if m.ackSet != nil {
			fmt.Fprintf(&b, " ackset=%b", m.ackSet[0])
		}
		if meta, err := fakeParse(m.data, nil); err != nil {
			fmt.Fprintf(&b, " unreadable: %v", err)
		} else if len(meta.Key) > 0 {
			fmt.Fprintf(&b, " key=%s", meta.Key)
		}
		b.WriteByte('\n')
	}
	if b.Len() == 0 {
		return "ok"
	}
	return b.String()
}

// scriptState prints each consumer's permits, unacked messages, pending
// entries (and bytes they hold) and active flag (when told one); the subscription's
// unacked count and closed consumers; the cursor's read and mark-delete
// positions and its storage re-reads.
func scriptState(s *Subscription, cur *fakeCursor, sink *recSink, cs map[string]*Consumer, order []string, names map[uint64]string) string {
	var b strings.Builder
	s.Call(func() {
		for _, n := range order {
			c := cs[n]
			held := 0
			for _, pe := range c.pending {
				held += len(pe.data)
			}
			fmt.Fprintf(&b, "%s: permits=%d unacked=%d pending=%d pending-bytes=%d", n, c.permits, c.unackedMsg, len(c.pending), held)
			sink.mu.Lock()
			if active, told := sink.active[c.id]; told {
				fmt.Fprintf(&b, " active=%v", active)
			}
			sink.mu.Unlock()
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "subscription: unacked=%d\n", s.unacked)
	})
	sink.mu.Lock()
	for _, id := range sink.closed {
		fmt.Fprintf(&b, "closed by the broker: %s\n", names[id])
	}
	sink.mu.Unlock()
	cur.mu.Lock()
	fmt.Fprintf(&b, "cursor: read=%d mark-delete=%d re-reads=%d\n", cur.read, cur.markDel, cur.reads)
	cur.mu.Unlock()
	return b.String()
}
