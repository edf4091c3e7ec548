package bkproto

import (
	"bytes"
	"encoding/hex"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/magnetar-mq/magnetar/internal/corrupt"
)

var rewrite = flag.Bool("rewrite", false, "rewrite golden frames in testdata")

var key = []byte("master-key")

func sampleRequests() map[string]Request {
	return map[string]Request{
		"add":          {Op: OpAdd, ReqID: 1, Ledger: 7, Entry: 3, MasterKey: key, Payload: []byte("entry-bytes")},
		"add_recovery": {Op: OpAdd, Flags: FlagRecovery | FlagHighPriority, ReqID: 2, Ledger: 7, Entry: 4, MasterKey: key, Payload: []byte("e")},
		"read":         {Op: OpRead, ReqID: 3, Ledger: 7, Entry: 5},
		"read_fence":   {Op: OpRead, Flags: FlagFence | FlagHighPriority, ReqID: 4, Ledger: 7, Entry: -1, MasterKey: key},
		"read_lac":     {Op: OpReadLAC, ReqID: 5, Ledger: 9},
		"write_lac":    {Op: OpWriteLAC, ReqID: 6, Ledger: 9, Entry: 41, MasterKey: key, Payload: []byte("lac-body")},
		"long_poll":    {Op: OpLongPoll, ReqID: 7, Ledger: 9, Entry: 41, TimeoutMs: 1500},
		"auth":         {Op: OpAuth, ReqID: 8, Payload: []byte("token")},
	}
}

func sampleResponses() map[string]Response {
	return map[string]Response{
		"add_ok":        {Op: OpAdd, Status: EOK, ReqID: 1, Ledger: 7, Entry: 3},
		"add_fenced":    {Op: OpAdd, Status: EFENCED, ReqID: 2, Ledger: 7, Entry: 4},
		"read_ok":       {Op: OpRead, Status: EOK, ReqID: 3, Ledger: 7, Entry: 5, Payload: []byte("entry-bytes")},
		"read_noentry":  {Op: OpRead, Status: ENOENTRY, ReqID: 4, Ledger: 7, Entry: -1},
		"read_lac":      {Op: OpReadLAC, Status: EOK, ReqID: 5, Ledger: 9, Entry: 40, Payload: []byte("last")},
		"long_poll":     {Op: OpLongPoll, Status: EOK, ReqID: 7, Ledger: 9, Entry: 42, Payload: []byte("next")},
		"auth_rejected": {Op: OpAuth, Status: EUA, ReqID: 8, Payload: []byte("no")},
	}
}

func norm(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

func normReq(r Request) Request {
	r.MasterKey, r.Payload = norm(r.MasterKey), norm(r.Payload)
	return r
}

func TestRequestRoundTrip(t *testing.T) {
	for name, r := range sampleRequests() {
		b, err := AppendRequest([]byte("prefix"), &r)
		if err != nil {
			t.Fatalf("%s: AppendRequest: %v", name, err)
		}
		rest, got, err := DecodeRequest(append(b[len("prefix"):], "tail"...))
		if err != nil {
			t.Fatalf("%s: DecodeRequest: %v", name, err)
		}
		if string(rest) != "tail" {
			t.Errorf("%s: rest = %q, want %q", name, rest, "tail")
		}
		if want := normReq(r); !reflect.DeepEqual(normReq(got), want) {
			t.Errorf("%s: DecodeRequest = %+v, want %+v", name, got, want)
		}
	}
}

func TestResponseRoundTrip(t *testing.T) {
	for name, r := range sampleResponses() {
		b, err := AppendResponse(nil, &r)
		if err != nil {
			t.Fatalf("%s: AppendResponse: %v", name, err)
		}
		rest, got, err := DecodeResponse(b)
		if err != nil || len(rest) != 0 {
			t.Fatalf("%s: DecodeResponse: rest %d, %v", name, len(rest), err)
		}
		got.Payload = norm(got.Payload)
		r.Payload = norm(r.Payload)
		if !reflect.DeepEqual(got, r) {
			t.Errorf("%s: DecodeResponse = %+v, want %+v", name, got, r)
		}
	}
}

// TestRequestCorruption: table of encoded requests with a corruption hook
// and the decode error expected.
func TestRequestCorruption(t *testing.T) {
	reqs := sampleRequests()
	for _, tc := range []struct {
		name    string
		req     string
		corrupt func([]byte) []byte
		wantErr error
	}{
		{"intact", "add", func(b []byte) []byte { return b }, nil},
		{"truncated_body", "add", func(b []byte) []byte { return b[:len(b)-1] }, ErrShort},
		{"truncated_length", "add", func(b []byte) []byte { return b[:3] }, ErrShort},
		{"empty", "read", func(b []byte) []byte { return nil }, ErrShort},
		{"unknown_op", "read", func(b []byte) []byte { b[4] = 99; return b }, ErrCorrupt},
		{"zero_op", "read", func(b []byte) []byte { b[4] = 0; return b }, ErrCorrupt},
		{"length_too_small", "read", func(b []byte) []byte { b[3] = 2; return b }, ErrCorrupt},
		{"length_too_large", "read", func(b []byte) []byte { b[0] = 0x7f; return b }, ErrFrameTooLarge},
		{"key_length_past_end", "add", func(b []byte) []byte { b[4+1+1+8+16] = 0xff; return b }, ErrCorrupt},
		{"read_with_trailing_bytes", "read", func(b []byte) []byte { return grow(b, 3) }, ErrCorrupt},
		{"read_lac_short_body", "read_lac", func(b []byte) []byte { return shrink(b, 1) }, ErrCorrupt},
		{"long_poll_long_body", "long_poll", func(b []byte) []byte { return grow(b, 1) }, ErrCorrupt},
		{"fence_read_no_key", "read_fence", func(b []byte) []byte { return shrink(b, len(key)+2) }, ErrCorrupt},
		{"add_short_header", "add", func(b []byte) []byte { return shrink(b, len(b)-14-10) }, ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := reqs[tc.req]
			b, err := AppendRequest(nil, &r)
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = DecodeRequest(tc.corrupt(b))
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("DecodeRequest(corrupted %s) err = %v, want %v", tc.req, err, tc.wantErr)
			}
			if tc.wantErr == ErrCorrupt && !errors.Is(err, corrupt.Err) {
				t.Fatalf("DecodeRequest(corrupted %s) err = %v, want the shared corrupt.Err marker", tc.req, err)
			}
		})
	}
}

// grow appends n bytes to a frame and fixes its length field.
func grow(b []byte, n int) []byte {
	b = append(b, make([]byte, n)...)
	return setLen(b, len(b)-4)
}

// shrink drops n bytes from a frame and fixes its length field.
func shrink(b []byte, n int) []byte {
	b = b[:len(b)-n]
	return setLen(b, len(b)-4)
}

func setLen(b []byte, n int) []byte {
	b[0], b[1], b[2], b[3] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
	return b
}

func TestResponseCorruption(t *testing.T) {
	r := sampleResponses()["read_ok"]
	b, _ := AppendResponse(nil, &r)
	if _, _, err := DecodeResponse(b[:len(b)-1]); !errors.Is(err, ErrShort) {
		t.Errorf("truncated: %v, want ErrShort", err)
	}
	if _, _, err := DecodeResponse(shrink(append([]byte(nil), b...), len(b)-14-8)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("short body: %v, want ErrCorrupt", err)
	}
	c := append([]byte(nil), b...)
	c[4] = 200
	if _, _, err := DecodeResponse(c); !errors.Is(err, ErrCorrupt) {
		t.Errorf("bad op: %v, want ErrCorrupt", err)
	}
}

func TestEncodeLimits(t *testing.T) {
	big := make([]byte, MaxFrameSize)
	if _, err := AppendRequest(nil, &Request{Op: OpAdd, MasterKey: key, Payload: big}); !errors.Is(err, ErrFrameTooLarge) {
		t.Errorf("AppendRequest(5 MiB payload) err = %v, want ErrFrameTooLarge", err)
	}
	if _, err := AppendResponse(nil, &Response{Op: OpRead, Payload: big}); !errors.Is(err, ErrFrameTooLarge) {
		t.Errorf("AppendResponse(5 MiB payload) err = %v, want ErrFrameTooLarge", err)
	}
	if _, err := AppendRequest(nil, &Request{Op: 0}); !errors.Is(err, ErrBadRequest) {
		t.Errorf("AppendRequest(op 0) err = %v, want ErrBadRequest", err)
	}
	max := make([]byte, MaxFrameSize-(headerSize-4)-16-2-len(key))
	b, err := AppendRequest(nil, &Request{Op: OpAdd, MasterKey: key, Payload: max})
	if err != nil {
		t.Fatalf("AppendRequest(largest add) err = %v", err)
	}
	if _, _, err := DecodeRequest(b); err != nil {
		t.Fatalf("DecodeRequest(largest add) err = %v", err)
	}
}

// TestGolden checks every sample frame against testdata/*.hex: the decoder
// reads the file and the encoder reproduces it byte for byte.
func TestGolden(t *testing.T) {
	check := func(name string, enc []byte) {
		path := filepath.Join("testdata", name+".hex")
		if *rewrite {
			if err := os.WriteFile(path, []byte(hex.EncodeToString(enc)+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		want, err := hex.DecodeString(strings.TrimSpace(string(raw)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(enc, want) {
			t.Errorf("%s: encoding = %x, golden %x", name, enc, want)
		}
	}
	for name, r := range sampleRequests() {
		b, _ := AppendRequest(nil, &r)
		check("req_"+name, b)
	}
	for name, r := range sampleResponses() {
		b, _ := AppendResponse(nil, &r)
		check("resp_"+name, b)
	}
	e := AppendEntry(nil, EntryHeader{LedgerID: 7, EntryID: 3, LAC: 2, Length: 300}, []byte("payload"))
	check("entry", e)
}

func TestStatus(t *testing.T) {
	for s := EOK; s < numStatus; s++ {
		if got := StatusOf(s.Err()); got != s {
			t.Errorf("StatusOf(%v.Err()) = %v", s, got)
		}
	}
	if StatusOf(errors.New("other")) != EIO || Status(77).Err() != ErrIO {
		t.Error("unknown errors and codes must map to EIO")
	}
	if got := ETOOMANYREQUESTS.String(); got != "ETOOMANYREQUESTS" {
		t.Errorf("String() = %q", got)
	}
}

func TestEntry(t *testing.T) {
	h := EntryHeader{LedgerID: 1, EntryID: 2, LAC: 1, Length: 99}
	e := AppendEntry(nil, h, []byte("hello"))
	gh, p, err := DecodeEntry(e)
	if err != nil || gh != h || string(p) != "hello" {
		t.Fatalf("DecodeEntry = %+v, %q, %v", gh, p, err)
	}
	for i := range e {
		c := append([]byte(nil), e...)
		c[i] ^= 0x40
		if _, _, err := DecodeEntry(c); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("flipped byte %d: err %v, want ErrCorrupt", i, err)
		}
	}
	if _, _, err := DecodeEntry(e[:EntryHeaderSize-1]); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("short entry: %v", err)
	}
}

func TestAddPathAllocs(t *testing.T) {
	payload := make([]byte, 1024)
	buf := make([]byte, 0, 4096)
	entry := make([]byte, 0, 2048)
	allocs := testing.AllocsPerRun(100, func() {
		entry = AppendEntry(entry[:0], EntryHeader{LedgerID: 1, EntryID: 2}, payload)
		r := Request{Op: OpAdd, ReqID: 9, Ledger: 1, Entry: 2, MasterKey: key, Payload: entry}
		b, _ := AppendRequest(buf[:0], &r)
		_, req, _ := DecodeRequest(b)
		resp := Response{Op: OpAdd, ReqID: req.ReqID, Ledger: req.Ledger, Entry: req.Entry}
		b, _ = AppendResponse(b[:0], &resp)
		DecodeResponse(b)
		DecodeEntry(req.Payload)
	})
	if allocs != 0 {
		t.Fatalf("add path allocates %v times per op, want 0", allocs)
	}
}

func BenchmarkAddRequest(b *testing.B) {
	for _, size := range []int{100, 65536} {
		b.Run("size="+itoa(size), func(b *testing.B) {
			payload := make([]byte, size)
			buf := make([]byte, 0, size+128)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				r := Request{Op: OpAdd, ReqID: 9, Ledger: 1, Entry: 2, MasterKey: key, Payload: payload}
				out, _ := AppendRequest(buf[:0], &r)
				DecodeRequest(out)
			}
		})
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var d []byte
	for ; n > 0; n /= 10 {
		d = append([]byte{byte('0' + n%10)}, d...)
	}
	return string(d)
}
