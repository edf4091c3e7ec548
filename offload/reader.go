package offload

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"time"
)

// ReadHandle reads the entries of one offloaded ledger. It keeps one
// read-ahead buffer of ReadBufferSize bytes over the data object: a read
// that finds its bytes in the buffer costs no request; otherwise one
// ranged GET refills the buffer from the wanted offset. Sequential
// readers (cursors catching up) therefore issue one GET per buffer.
//
// Safe for concurrent use (reads are serialised).
type ReadHandle struct {
	id    int64
	uid   UID
	store blobStore
	ix    *index
	bufSz int64
	m     *Metrics

	mu     sync.Mutex
	closed bool
	buf    []byte
	bufOff int64 // data object offset of buf[0]
	// next is the offset of entry nextID's record, when known (-1 not).
	next   int64
	nextID int64
	blk    int // block holding next
}

func newReadHandle(id int64, uid UID, st blobStore, ix *index, bufSz int64, m *Metrics) *ReadHandle {
	return &ReadHandle{id: id, uid: uid, store: st, ix: ix, bufSz: bufSz, m: m, next: -1}
}

// ID returns the ledger id.
func (h *ReadHandle) ID() int64 { return h.id }

// LastAddConfirmed returns the ledger's last entry id.
func (h *ReadHandle) LastAddConfirmed() int64 { return h.ix.seg.LastEntryID }

// Length returns the sum of the entries' sizes.
func (h *ReadHandle) Length() int64 { return h.ix.seg.Length }

// DataLength returns the data object's size.
func (h *ReadHandle) DataLength() int64 { return h.ix.dataLength }

// Close releases the buffer; later reads fail with ErrClosed.
func (h *ReadHandle) Close() error {
	h.mu.Lock()
	h.closed, h.buf = true, nil
	h.mu.Unlock()
	return nil
}

// bytesAt returns n bytes at data offset off, from the buffer or after
// refilling it with one ranged GET of max(n, ReadBufferSize) bytes.
func (h *ReadHandle) bytesAt(ctx context.Context, off, n int64) ([]byte, error) {
	if off >= h.bufOff && off+n <= h.bufOff+int64(len(h.buf)) {
		return h.buf[off-h.bufOff : off-h.bufOff+n], nil
	}
	want := min(max(n, h.bufSz), h.ix.dataLength-off)
	if want < n || off < 0 {
		return nil, fmt.Errorf("ledger %d: read of %d bytes at %d beyond data object of %d: %w", h.id, n, off, h.ix.dataLength, ErrCorrupt)
	}
	key := DataKey(h.uid, h.id)
	start := time.Now()
	b, meta, err := h.store.getRange(ctx, key, off, want)
	h.m.ReadSeconds.Observe(time.Since(start).Seconds())
	if err != nil {
		h.m.ReadErrors.Inc()
		h.buf = nil
		return nil, fmt.Errorf("error reading from object store: %w", err)
	}
	if err := checkVersion(key, meta); err != nil {
		h.buf = nil
		return nil, err
	}
	if int64(len(b)) < n {
		h.buf = nil
		return nil, fmt.Errorf("ledger %d: short read at %d: %w", h.id, off, ErrCorrupt)
	}
	h.m.ReadBytes.Add(float64(len(b)))
	h.buf, h.bufOff = b, off
	return b[:n], nil
}

// seek positions the stream at the block holding entry id.
func (h *ReadHandle) seek(id int64) {
	h.blk = h.ix.block(id)
	h.next, h.nextID = h.ix.blocks[h.blk].offset+blockHeaderSize, h.ix.blocks[h.blk].firstEntryID
}

// Read returns entries first..last inclusive.
func (h *ReadHandle) Read(ctx context.Context, first, last int64) ([][]byte, error) {
	if first < 0 || first > last || last > h.ix.seg.LastEntryID {
		return nil, fmt.Errorf("ledger %d: read %d..%d of 0..%d: %w", h.id, first, last, h.ix.seg.LastEntryID, ErrBadRange)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	if h.next < 0 || h.nextID > first || h.blk != h.ix.block(first) {
		h.seek(first)
	}
	out := make([][]byte, 0, last-first+1)
	for id := first; id <= last; {
		end := h.ix.blockEnd(h.blk)
		if h.next+entryHeaderSize > end {
			// Past the block's entries: the next block.
			if err := h.nextBlock(id); err != nil {
				return nil, err
			}
			continue
		}
		hdr, err := h.bytesAt(ctx, h.next, entryHeaderSize)
		if err != nil {
			h.next = -1
			return nil, err
		}
		ln := int32(binary.BigEndian.Uint32(hdr))
		eid := int64(binary.BigEndian.Uint64(hdr[4:]))
		if ln < 0 {
			// Padding: the block has no more entries.
			if err := h.nextBlock(id); err != nil {
				return nil, err
			}
			continue
		}
		if eid != h.nextID || h.next+entryHeaderSize+int64(ln) > end {
			h.next = -1
			return nil, fmt.Errorf("ledger %d: record at %d is entry %d (len %d), want %d: %w", h.id, h.next, eid, ln, h.nextID, ErrCorrupt)
		}
		if eid == id {
			data, err := h.bytesAt(ctx, h.next+entryHeaderSize, int64(ln))
			if err != nil {
				h.next = -1
				return nil, err
			}
			out = append(out, append([]byte(nil), data...))
			id++
		}
		h.next += entryHeaderSize + int64(ln)
		h.nextID++
	}
	return out, nil
}

// nextBlock moves the stream to the start of the next block, which must
// begin with the entry that follows.
func (h *ReadHandle) nextBlock(want int64) error {
	if h.blk+1 >= len(h.ix.blocks) || h.ix.blocks[h.blk+1].firstEntryID != h.nextID {
		h.next = -1
		return fmt.Errorf("ledger %d: entry %d not found: %w", h.id, want, ErrCorrupt)
	}
	h.blk++
	h.next = h.ix.blocks[h.blk].offset + blockHeaderSize
	return nil
}
