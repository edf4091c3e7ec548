package mledger

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

func parsePos(t *testing.T, s string) Position {
	t.Helper()
	l, e, ok := strings.Cut(s, ":")
	if !ok {
		t.Fatalf("bad position %q", s)
	}
	li, err1 := strconv.ParseInt(l, 10, 64)
	ei, err2 := strconv.ParseInt(e, 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("bad position %q", s)
	}
	return Position{li, ei}
}

func (s *ackState) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "md=%s acked=[", s.markDelete)
	for i, l := range s.ledgers {
		if i > 0 {
			b.WriteString(" ")
		}
		first := true
		it := s.acked[l].Iterator()
		var start, prev int64 = -2, -2
		flush := func() {
			if start < 0 {
				return
			}
			if !first {
				b.WriteString(" ")
			}
			first = false
			if start == prev {
				fmt.Fprintf(&b, "%d:%d", l, start)
			} else {
				fmt.Fprintf(&b, "%d:%d..%d", l, start, prev)
			}
		}
		for it.HasNext() {
			v := int64(it.Next())
			if v != prev+1 {
				flush()
				start = v
			}
			prev = v
		}
		flush()
	}
	b.WriteString("] batch=[")
	for i, p := range s.batchKeys() {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s:%x", p, s.batch[p])
	}
	fmt.Fprintf(&b, "] count=%d", s.ackedCount)
	return b.String()
}

// TestAckStateDataDriven runs testdata/ackstate. Commands:
//
//	init ledgers=1:5,2:0,3:10 md=1:-1   ledger list (id:entries) and mark-delete
//	ack <pos>...                        individual acks, then advance
//	batch <pos> <hex words>...          batch-index ack (bit set = unacked)
//	mark-delete <pos>                   cumulative ack, then advance
//	reset <pos>                         seek: forget acks, md = pos
//	backlog                             entries after md not acked
//	roundtrip                           snapshot encode/decode equals state
func TestAckStateDataDriven(t *testing.T) {
	var s *ackState
	var ls ledgerList
	datadriven.RunTest(t, "testdata/ackstate", func(t *testing.T, d *datadriven.TestData) string {
		switch d.Cmd {
		case "init":
			ls = nil
			md := Position{-1, -1}
			for _, a := range d.CmdArgs {
				switch a.Key {
				case "ledgers":
					for _, v := range a.Vals {
						p := parsePos(t, v)
						ls = append(ls, LedgerInfo{LedgerID: p.LedgerID, Entries: p.EntryID})
					}
				case "md":
					md = parsePos(t, a.Vals[0])
				}
			}
			s = newAckState(md)
		case "ack":
			for _, a := range d.CmdArgs {
				s.ack(parsePos(t, a.Key))
			}
			s.advance(ls)
		case "batch":
			p := parsePos(t, d.CmdArgs[0].Key)
			var words []uint64
			for _, a := range d.CmdArgs[1:] {
				w, err := strconv.ParseUint(a.Key, 16, 64)
				if err != nil {
					t.Fatal(err)
				}
				words = append(words, w)
			}
			s.ackBatch(p, words)
			s.advance(ls)
		case "mark-delete":
			p := parsePos(t, d.CmdArgs[0].Key)
			if s.markDelete.Less(p) {
				s.setMarkDelete(p)
			}
			s.advance(ls)
		case "reset":
			s.reset(parsePos(t, d.CmdArgs[0].Key))
		case "backlog":
			last, _ := ls.last()
			return fmt.Sprintf("%d", ls.entriesBetween(s.markDelete, last)-s.ackedCount)
		case "roundtrip":
			enc, dropped := appendSnapshot(nil, s, 0)
			rest, got, err := decodeSnapshot(enc)
			if err != nil || len(rest) != 0 || dropped != 0 {
				t.Fatalf("decodeSnapshot: rest=%d err=%v dropped=%d", len(rest), err, dropped)
			}
			if got.String() != s.String() {
				t.Fatalf("roundtrip = %s, want %s", got, s)
			}
			return fmt.Sprintf("ok %d bytes", len(enc))
		default:
			t.Fatalf("unknown command %q", d.Cmd)
		}
		return s.String()
	})
}
