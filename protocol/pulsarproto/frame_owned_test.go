package pulsarproto

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"testing"
	"testing/iotest"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// sendFrameOfSize returns a SEND frame of exactly n bytes (4+totalSize)
// whose payload is a checksummed entry.
func sendFrameOfSize(t testing.TB, n int) []byte {
	t.Helper()
	overhead := len(mustAppend(t, testSendCmd(), testEntry(t, 0)))
	f := mustAppend(t, testSendCmd(), testEntry(t, n-overhead))
	if len(f) != n {
		t.Fatalf("built a %d-byte frame, want %d", len(f), n)
	}
	return f
}

// checkOwned checks the owned-frame contract of f: Owned, the payload
// reachable through PayloadBuffer with at least FrameHeadroom bytes in
// front, and equal to want.
func checkOwned(t *testing.T, f Frame, want []byte) []byte {
	t.Helper()
	if !f.Owned {
		t.Fatalf("%d-byte frame not Owned", len(f.Raw))
	}
	buf, off, ok := f.PayloadBuffer()
	if !ok || off < FrameHeadroom || !bytes.Equal(buf[off:], want) || &buf[off] != &f.Payload[0] {
		t.Fatalf("PayloadBuffer = %d bytes, offset %d, ok %v; want the payload after >= %d bytes", len(buf), off, ok, FrameHeadroom)
	}
	return buf[off:]
}

// TestFrameReaderOwnedSplitReads reads large frames, interleaved with small
// ones, through a small bufio.Reader over a source that returns a few
// bytes (or a few KiB) per Read: the large frames come back Owned, and
// their payloads stay intact while later frames are read, even after the
// bytes in front of them are overwritten.
func TestFrameReaderOwnedSplitReads(t *testing.T) {
	big1 := mustAppend(t, testSendCmd(), testEntry(t, 3*OwnedFrameThreshold))
	big2 := mustAppend(t, testSendCmd(), testEntry(t, OwnedFrameThreshold+1))
	small := mustAppend(t, testSendCmd(), testEntry(t, 100))
	ping, _ := AppendCommand(nil, &pb.BaseCommand{Type: pb.BaseCommand_PING.Enum(), Ping: &pb.CommandPing{}})
	frames := [][]byte{small, big1, ping, big2, big1, small, big2}
	var stream []byte
	for _, f := range frames {
		stream = append(stream, f...)
	}
	for _, chunk := range []int{1, 7, 4093, 70000} {
		for _, bufSize := range []int{16, 4096, 64 << 10} {
			fr := NewFrameReader(bufio.NewReaderSize(&chunkReader{b: stream, n: chunk}, bufSize), 0)
			var kept, want [][]byte
			for i, raw := range frames {
				f, err := fr.Next()
				if err != nil {
					t.Fatalf("chunk %d buffer %d frame %d: %v", chunk, bufSize, i, err)
				}
				wantPayload := raw[len(raw)-len(f.Payload):]
				if !bytes.Equal(f.Raw, raw) {
					t.Fatalf("chunk %d buffer %d frame %d: Raw differs", chunk, bufSize, i)
				}
				if len(raw) <= OwnedFrameThreshold {
					if f.Owned {
						t.Fatalf("frame %d of %d bytes Owned", i, len(raw))
					}
					if _, _, ok := f.PayloadBuffer(); ok {
						t.Fatalf("frame %d: PayloadBuffer ok on a reused buffer", i)
					}
					continue
				}
				p := checkOwned(t, f, wantPayload)
				buf, off, _ := f.PayloadBuffer()
				for j := range buf[:off] {
					buf[j] = 0xee // what the ledger does with the headroom
				}
				kept, want = append(kept, p), append(want, wantPayload)
			}
			if _, err := fr.Next(); err != io.EOF {
				t.Fatalf("Next at end: %v, want io.EOF", err)
			}
			for i := range kept {
				if !bytes.Equal(kept[i], want[i]) {
					t.Fatalf("chunk %d buffer %d: kept payload %d changed", chunk, bufSize, i)
				}
				if _, err := VerifyEntry(kept[i]); err != nil {
					t.Fatalf("kept payload %d: %v", i, err)
				}
			}
		}
	}
}

// TestFrameReaderOwnedThreshold: a frame of exactly OwnedFrameThreshold
// bytes uses the reused buffer (valid until the next call), one byte more
// is Owned.
func TestFrameReaderOwnedThreshold(t *testing.T) {
	at := sendFrameOfSize(t, OwnedFrameThreshold)
	above := sendFrameOfSize(t, OwnedFrameThreshold+1)
	fr := NewFrameReader(bytes.NewReader(append(append(append([]byte(nil), at...), above...), at...)), 0)
	f, err := fr.Next()
	if err != nil || f.Owned || !bytes.Equal(f.Raw, at) {
		t.Fatalf("frame at threshold: Owned %v, err %v", f.Owned, err)
	}
	reused := f.Raw
	f, err = fr.Next()
	if err != nil {
		t.Fatal(err)
	}
	checkOwned(t, f, above[len(above)-len(f.Payload):])
	if f2, err := fr.Next(); err != nil || f2.Owned || &f2.Raw[0] != &reused[0] {
		t.Fatalf("second frame at threshold: Owned %v, err %v, reused buffer %v", f2.Owned, err, err == nil && &f2.Raw[0] == &reused[0])
	}
}

// TestFrameReaderOversizeNoAlloc: a totalSize above the limit is refused
// from the 4-byte header, before anything of that size is allocated.
func TestFrameReaderOversizeNoAlloc(t *testing.T) {
	const limit = 64 << 20
	hdr := binary.BigEndian.AppendUint32(nil, limit+1)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fr := NewFrameReader(bufio.NewReader(io.MultiReader(bytes.NewReader(hdr), iotest.ErrReader(errors.New("body read")))), limit)
	_, err := fr.Next()
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("Next err = %v, want ErrFrameTooLarge", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Fatalf("refusing an oversize frame allocated %d bytes", got)
	}
	// The limit itself is accepted (and then truncated: no body).
	fr = NewFrameReader(bytes.NewReader(binary.BigEndian.AppendUint32(nil, 1<<20)), 1<<20)
	if _, err := fr.Next(); !errors.Is(err, ErrTruncated) {
		t.Fatalf("frame at the limit without body: err = %v, want ErrTruncated", err)
	}
}

// TestFrameReaderOwnedTruncated cuts an owned frame's stream at points
// inside the header and body: each gives ErrTruncated wrapping
// io.ErrUnexpectedEOF, like the reused-buffer path; other read errors are
// returned unchanged.
func TestFrameReaderOwnedTruncated(t *testing.T) {
	big := sendFrameOfSize(t, 3*OwnedFrameThreshold)
	for _, cut := range []int{2, 4, 7, 100, OwnedFrameThreshold, len(big) - 1} {
		for _, chunk := range []int{1, 5000, len(big)} {
			if chunk == 1 && cut > 100 {
				continue // byte-by-byte over 200 KB adds nothing
			}
			fr := NewFrameReader(bufio.NewReaderSize(&chunkReader{b: big[:cut], n: chunk}, 4096), 0)
			_, err := fr.Next()
			if !errors.Is(err, ErrTruncated) || !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("cut at %d, chunk %d: err = %v, want ErrTruncated and io.ErrUnexpectedEOF", cut, chunk, err)
			}
		}
		boom := errors.New("boom")
		fr := NewFrameReader(io.MultiReader(bytes.NewReader(big[:cut]), iotest.ErrReader(boom)), 0)
		if _, err := fr.Next(); !errors.Is(err, boom) {
			t.Fatalf("cut at %d then error: err = %v, want boom", cut, err)
		}
	}
	// Decoding errors of an owned frame are the Decoder's.
	bad := append([]byte(nil), big...)
	binary.BigEndian.PutUint32(bad[4:], uint32(len(bad))) // commandSize past the frame
	if _, err := NewFrameReader(bytes.NewReader(bad), 0).Next(); !errors.Is(err, ErrBadCommandSize) {
		t.Fatalf("owned frame with bad commandSize: err = %v, want ErrBadCommandSize", err)
	}
}
