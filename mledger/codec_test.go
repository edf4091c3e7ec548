package mledger

import (
	"bytes"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/magnetar-mq/magnetar/offload"
)

var goldenProps = map[string]string{"pulsar.replicated.subscription": "1", "b": "", "a": "x"}

var updateGolden = flag.Bool("update", false, "rewrite golden files in testdata/golden")

func goldenState() *ackState {
	s := newAckState(Position{3, 7})
	for _, e := range []int64{9, 10, 11, 20} {
		s.ack(Position{3, e})
	}
	s.ackRange(5, 0, 99)
	s.ack(Position{5, 1000})
	s.ackBatch(Position{3, 8}, []uint64{0x5, 0x1})
	return s
}

func goldenDelta() *delta {
	return &delta{
		markDelete: Position{3, 11},
		ranges:     []entryRange{{3, 20, 20}, {5, 100, 140}, {5, 1000, 1000}, {6, 0, 3}},
		batches:    []batchUpdate{{Pos: Position{3, 8}, Set: []uint64{0x4, 0}}},
	}
}

func goldenInfo() *mlInfo {
	return &mlInfo{terminated: true, ledgers: []LedgerInfo{
		{LedgerID: 3, Entries: 50000, Size: 10 << 20, Messages: 400000, Timestamp: 1767225600000},
		{LedgerID: 5, Entries: 1001, Size: 200200, Messages: 1001, Timestamp: 1767225700000},
		{LedgerID: 9, Entries: 0, Size: 0, Messages: 0, Timestamp: 0},
	}}
}

// TestGoldenFormatV1 pins the version-1 encodings: the writer must
// reproduce testdata/golden/*-v1.bin byte for byte and the reader must
// decode them to the same values. Run with -update only for a deliberate
// format change (and bump formatVersion).
func TestGoldenFormatV1(t *testing.T) {
	snap, dropped := appendSnapshot(nil, goldenState(), 0)
	if dropped != 0 {
		t.Fatal("dropped without a cap")
	}
	var chunks []byte
	chunks = appendSnapshotChunk(chunks, 0, true, snap)
	files := map[string][]byte{
		"snapshot-v1.bin":       snap,
		"snapshot-chunk-v1.bin": chunks,
		"delta-record-v1.bin":   appendDeltaRecord(nil, goldenDelta()),
		"cursor-node-v1.bin":    appendCursorNode(nil, &cursorNode{ledgerID: 42, markDelete: Position{3, 7}}),
		"cursor-node-inline-v1.bin": appendCursorNode(nil,
			&cursorNode{ledgerID: -1, markDelete: Position{3, 7}, inline: snap}),
		"cursor-node-props-v1.bin": appendCursorNode(nil,
			&cursorNode{ledgerID: 42, markDelete: Position{3, 7}, props: goldenProps}),
		"info-v1.bin": appendInfo(nil, goldenInfo()),
	}
	dir := filepath.Join("testdata", "golden")
	for name, got := range files {
		path := filepath.Join(dir, name)
		if *updateGolden {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: encoding changed:\n got %x\nwant %x", name, got, want)
		}
	}
	// Decode the golden bytes.
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	rest, s, err := decodeSnapshot(read("snapshot-v1.bin"))
	if err != nil || len(rest) != 0 || s.String() != goldenState().String() {
		t.Fatalf("decodeSnapshot = %v, %v (rest %d); want %v", s, err, len(rest), goldenState())
	}
	rec := read("delta-record-v1.bin")
	if rec[0] != formatVersion || rec[1] != recDelta {
		t.Fatalf("delta record header %x", rec[:2])
	}
	rest, d, err := decodeDelta(rec[2:])
	if err != nil || len(rest) != 0 || !reflect.DeepEqual(d, goldenDelta()) {
		t.Fatalf("decodeDelta = %+v, %v; want %+v", d, err, goldenDelta())
	}
	rest, n, err := decodeCursorNode(read("cursor-node-inline-v1.bin"))
	if err != nil || len(rest) != 0 || n.ledgerID != -1 || n.markDelete != (Position{3, 7}) || !bytes.Equal(n.inline, snap) {
		t.Fatalf("decodeCursorNode = %+v, %v", n, err)
	}
	rest, n, err = decodeCursorNode(read("cursor-node-props-v1.bin"))
	if err != nil || len(rest) != 0 || n.ledgerID != 42 || !reflect.DeepEqual(n.props, goldenProps) {
		t.Fatalf("decodeCursorNode(props) = %+v, %v", n, err)
	}
	// A node written before properties existed decodes with none.
	if _, n, err = decodeCursorNode(read("cursor-node-v1.bin")); err != nil || n.props != nil {
		t.Fatalf("decodeCursorNode(v1) = %+v, %v", n, err)
	}
	rest, in, err := decodeInfo(read("info-v1.bin"))
	if err != nil || len(rest) != 0 || !reflect.DeepEqual(in, goldenInfo()) {
		t.Fatalf("decodeInfo = %+v, %v; want %+v", in, err, goldenInfo())
	}
	// Replaying the delta onto the snapshot.
	applyDelta(s, d)
	if got, want := s.String(), "md=3:11 acked=[3:20 5:0..140 5:1000 6:0..3] batch=[] count=147"; got != want {
		t.Fatalf("after applyDelta: %s, want %s", got, want)
	}
}

// TestDecodersRejectCorruption truncates and garbles every golden
// encoding: decoders return ErrCorrupt or succeed, never panic.
func TestDecodersRejectCorruption(t *testing.T) {
	snap, _ := appendSnapshot(nil, goldenState(), 0)
	cases := []struct {
		name   string
		enc    []byte
		decode func([]byte) error
	}{
		{"snapshot", snap, func(b []byte) error { _, _, err := decodeSnapshot(b); return err }},
		{"delta", appendDelta(nil, goldenDelta()), func(b []byte) error { _, _, err := decodeDelta(b); return err }},
		{"node", appendCursorNode(nil, &cursorNode{ledgerID: 1, inline: snap}), func(b []byte) error { _, _, err := decodeCursorNode(b); return err }},
		{"node-props", appendCursorNode(nil, &cursorNode{ledgerID: 1, props: goldenProps}), func(b []byte) error { _, _, err := decodeCursorNode(b); return err }},
		{"info", appendInfo(nil, goldenInfo()), func(b []byte) error { _, _, err := decodeInfo(b); return err }},
	}
	for _, tc := range cases {
		for i := range len(tc.enc) {
			if err := tc.decode(tc.enc[:i]); err != nil && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%s truncated at %d: err %v is not ErrCorrupt", tc.name, i, err)
			}
			g := bytes.Clone(tc.enc)
			g[i] ^= 0xff
			if err := tc.decode(g); err != nil && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%s garbled at %d: err %v is not ErrCorrupt", tc.name, i, err)
			}
		}
	}
}

func FuzzDecodeSnapshot(f *testing.F) {
	snap, _ := appendSnapshot(nil, goldenState(), 0)
	f.Add(snap)
	f.Add(appendDelta(nil, goldenDelta()))
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, s, err := decodeSnapshot(b); err == nil {
			enc, _ := appendSnapshot(nil, s, 0)
			if _, s2, err := decodeSnapshot(enc); err != nil || s2.String() != s.String() {
				t.Fatalf("re-encode roundtrip: %v", err)
			}
		}
		_, _, _ = decodeDelta(b)
		_, _, _ = decodeInfo(b)
		_, _, _ = decodeCursorNode(b)
	})
}

func TestSnapshotCapDropsFarAcks(t *testing.T) {
	s := newAckState(Position{1, -1})
	for l := int64(1); l <= 5; l++ {
		for e := int64(1); e < 100000; e += 2 {
			s.ack(Position{l, e})
		}
	}
	full, dropped := appendSnapshot(nil, s, 0)
	if dropped != 0 {
		t.Fatal("dropped without cap")
	}
	capBytes := len(full) / 3
	enc, dropped := appendSnapshot(nil, s, capBytes)
	if len(enc) > capBytes || dropped == 0 {
		t.Fatalf("capped snapshot %d bytes (cap %d), dropped %d", len(enc), capBytes, dropped)
	}
	_, got, err := decodeSnapshot(enc)
	if err != nil {
		t.Fatal(err)
	}
	// What is kept is a prefix nearest mark-delete, and exactly the rest.
	if got.ackedCount+dropped != s.ackedCount {
		t.Fatalf("kept %d + dropped %d != %d", got.ackedCount, dropped, s.ackedCount)
	}
	if !got.isAcked(Position{1, 1}) || got.isAcked(Position{5, 99999}) {
		t.Fatal("cap did not keep the acks nearest mark-delete")
	}
}

func TestInfoOffloadSectionRoundTrip(t *testing.T) {
	in := &mlInfo{ledgers: []LedgerInfo{
		{LedgerID: 3, Entries: 10, Size: 100, Messages: 10, Timestamp: 5},
		{LedgerID: 7, Entries: 1, Size: 1, Messages: 1, Timestamp: 6, Offload: &OffloadContext{
			UID: offload.NewUID(), Complete: true, BookkeeperDeleted: true, Timestamp: math.MaxInt64,
			Driver: "aws-s3", DriverMetadata: map[string]string{"bucket": "b", "region": ""}}},
		{LedgerID: math.MaxInt64, Offload: &OffloadContext{UID: offload.NewUID()}},
	}}
	b := appendInfo(nil, in)
	if b[1]&infoFlagOffload == 0 {
		t.Fatal("flag not set")
	}
	_, out, err := decodeInfo(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip:\n%+v\n%+v", in.ledgers[1].Offload, out.ledgers[1].Offload)
	}
	// Truncations are errors, never panics.
	for i := 2; i < len(b); i++ {
		if _, _, err := decodeInfo(b[:i]); err == nil {
			t.Fatalf("truncated to %d bytes: decoded", i)
		}
	}
	// Without offload contexts the bytes are exactly version 1's.
	plain := &mlInfo{ledgers: in.ledgers[:1]}
	if bb := appendInfo(nil, plain); bb[1] != 0 {
		t.Fatal("offload flag set without contexts")
	}
}

func TestInfoPropertiesRoundTrip(t *testing.T) {
	in := &mlInfo{ledgers: []LedgerInfo{{LedgerID: 3, Entries: 1, Size: 1, Messages: 1, Timestamp: 5}},
		compaction: &Compaction{Ledger: 9, Horizon: Position{3, 0}, Pending: -1},
		props:      map[string]string{"index": "9223372036854775807", "": "", "k": "\x00\xff"}}
	b := appendInfo(nil, in)
	if b[1]&infoFlagProps == 0 {
		t.Fatal("flag not set")
	}
	_, out, err := decodeInfo(b)
	if err != nil || !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip: %+v %v", out, err)
	}
	for i := 2; i < len(b); i++ {
		if _, _, err := decodeInfo(b[:i]); err == nil {
			t.Fatalf("truncated to %d bytes: decoded", i)
		}
	}
	if bb := appendInfo(nil, &mlInfo{ledgers: in.ledgers, props: map[string]string{}}); bb[1]&infoFlagProps != 0 {
		t.Fatal("properties flag set without properties")
	}
	// A count above the bound is corrupt, not an allocation.
	bad := append(appendInfo(nil, &mlInfo{ledgers: in.ledgers})[:0:0], appendInfo(nil, &mlInfo{ledgers: in.ledgers})...)
	bad[1] |= infoFlagProps
	bad = append(bad, 0xff, 0xff, 0xff, 0xff, 0x0f)
	if _, _, err := decodeInfo(bad); err == nil {
		t.Fatal("huge property count decoded")
	}
}
