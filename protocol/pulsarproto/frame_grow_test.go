package pulsarproto

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"testing"
)

// TestLargeFrameAllocatedAsBytesArrive: a frame announcing 100 MB whose
// sender stops after a few bytes costs the reader about one FrameChunk,
// not the announced size (FrameReader and ReadFrame); a complete large
// frame still reads back intact.
func TestLargeFrameAllocatedAsBytesArrive(t *testing.T) {
	const announced = 100 << 20
	hdr := binary.BigEndian.AppendUint32(nil, announced)
	partial := append(hdr, make([]byte, 1000)...)
	measure := func(read func() error) uint64 {
		var a, b runtime.MemStats
		runtime.ReadMemStats(&a)
		err := read()
		runtime.ReadMemStats(&b)
		if !errors.Is(err, ErrTruncated) {
			t.Fatalf("truncated large frame: %v", err)
		}
		return b.TotalAlloc - a.TotalAlloc
	}
	if got := measure(func() error {
		_, err := NewFrameReader(bufio.NewReader(bytes.NewReader(partial)), announced+8).Next()
		return err
	}); got > 1<<20 {
		t.Fatalf("FrameReader allocated %d bytes for a 100 MB announcement with 1000 bytes sent", got)
	}
	if got := measure(func() error {
		_, err := ReadFrame(bytes.NewReader(partial), announced+8, nil)
		return err
	}); got > 1<<20 {
		t.Fatalf("ReadFrame allocated %d bytes for a 100 MB announcement with 1000 bytes sent", got)
	}

	// A complete 3 MB SEND frame (several doublings) is read intact.
	f := sendFrameOfSize(t, 3<<20)
	got, err := NewFrameReader(bufio.NewReader(bytes.NewReader(f)), len(f)).Next()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Raw, f) {
		t.Fatalf("large frame read back wrong (%d bytes)", len(got.Raw))
	}
	checkOwned(t, got, got.Payload)
	raw, err := ReadFrame(bytes.NewReader(f), len(f), nil)
	if err != nil || !bytes.Equal(raw, f) {
		t.Fatalf("ReadFrame of a large frame: %v", err)
	}
}
