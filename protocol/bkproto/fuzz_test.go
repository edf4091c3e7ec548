package bkproto

import (
	"bytes"
	"testing"
)

// FuzzDecodeRequest: no panic; whatever decodes re-encodes to the same
// bytes; decoding the input in two chunks gives ErrShort then the same
// result.
func FuzzDecodeRequest(f *testing.F) {
	for _, r := range sampleRequests() {
		b, _ := AppendRequest(nil, &r)
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		rest, r, err := DecodeRequest(src)
		if err != nil {
			return
		}
		n := len(src) - len(rest)
		b, err := AppendRequest(nil, &r)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		if !bytes.Equal(b, src[:n]) {
			t.Fatalf("re-encoded %x, input %x", b, src[:n])
		}
		if n > 1 {
			if _, _, err := DecodeRequest(src[:n-1]); err != ErrShort {
				t.Fatalf("prefix of %d bytes: err %v, want ErrShort", n-1, err)
			}
		}
	})
}

func FuzzDecodeResponse(f *testing.F) {
	for _, r := range sampleResponses() {
		b, _ := AppendResponse(nil, &r)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		rest, r, err := DecodeResponse(src)
		if err != nil {
			return
		}
		n := len(src) - len(rest)
		b, err := AppendResponse(nil, &r)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		if !bytes.Equal(b, src[:n]) {
			t.Fatalf("re-encoded %x, input %x", b, src[:n])
		}
	})
}

func FuzzDecodeEntry(f *testing.F) {
	f.Add(AppendEntry(nil, EntryHeader{LedgerID: 7, EntryID: 3, LAC: 2, Length: 300}, []byte("payload")))
	f.Fuzz(func(t *testing.T, src []byte) {
		h, p, err := DecodeEntry(src)
		if err != nil {
			return
		}
		if b := AppendEntry(nil, h, p); !bytes.Equal(b, src) {
			t.Fatalf("re-encoded %x, input %x", b, src)
		}
	})
}
