package mledger

import (
	"encoding/binary"
	"maps"
	"slices"

	"github.com/magnetar-mq/magnetar/offload"
)

// infoFlagOffload marks an info node followed by the offload section.
const infoFlagOffload = 2

// infoFlagCompaction marks an info node followed by the compaction
// section (after the offload section when both are present).
const infoFlagCompaction = 4

// OffloadContext is one ledger's offload state, recorded in the managed
// ledger's info (Pulsar's OffloadContext).
type OffloadContext struct {
	// UID names the current (or last) attempt's objects; recorded before
	// any object is written.
	UID offload.UID
	// Complete: data and index were written and verified. Reads then go
	// to the object store.
	Complete bool
	// BookkeeperDeleted: the ledger's copy on the bookies was deleted
	// (after Complete plus the deletion lag).
	BookkeeperDeleted bool
	// Timestamp is when the offload completed (unix ms); the deletion lag
	// counts from it.
	Timestamp int64
	// Driver and DriverMetadata are the offloader's, recorded at prepare
	// (the bucket reads and deletes use).
	Driver         string
	DriverMetadata map[string]string
}

// appendOffloadSection encodes the offload contexts after the ledger list:
//
//	uvarint n, n × (varint ledgerId, 16 bytes uid, byte flags (bit 0
//	complete, bit 1 bookkeeperDeleted), varint timestamp, string driver,
//	uvarint nProps, nProps × (string key, string value))
//
// with string = uvarint length, bytes; properties sorted by key.
func appendOffloadSection(dst []byte, ls []LedgerInfo, n int) []byte {
	dst = binary.AppendUvarint(dst, uint64(n))
	str := func(s string) {
		dst = binary.AppendUvarint(dst, uint64(len(s)))
		dst = append(dst, s...)
	}
	for _, l := range ls {
		o := l.Offload
		if o == nil {
			continue
		}
		dst = binary.AppendVarint(dst, l.LedgerID)
		dst = append(dst, o.UID[:]...)
		var f byte
		if o.Complete {
			f |= 1
		}
		if o.BookkeeperDeleted {
			f |= 2
		}
		dst = append(dst, f)
		dst = binary.AppendVarint(dst, o.Timestamp)
		str(o.Driver)
		keys := slices.Sorted(maps.Keys(o.DriverMetadata))
		dst = binary.AppendUvarint(dst, uint64(len(keys)))
		for _, k := range keys {
			str(k)
			str(o.DriverMetadata[k])
		}
	}
	return dst
}

func decodeOffloadSection(src []byte, ls []LedgerInfo) ([]byte, error) {
	src, n, err := readUvarint(src)
	if err != nil {
		return src, err
	}
	if n > uint64(len(ls)) {
		return src, corruptf("%d offload contexts for %d ledgers", n, len(ls))
	}
	str := func() (string, error) {
		var l uint64
		if src, l, err = readUvarint(src); err != nil {
			return "", err
		}
		if l > uint64(len(src)) {
			return "", corruptf("string of %d bytes in %d", l, len(src))
		}
		s := string(src[:l])
		src = src[l:]
		return s, nil
	}
	for range n {
		var id int64
		if src, id, err = readVarint(src); err != nil {
			return src, err
		}
		i := ledgerList(ls).find(id)
		if i >= len(ls) || ls[i].LedgerID != id || ls[i].Offload != nil {
			return src, corruptf("offload context of unknown ledger %d", id)
		}
		if len(src) < 17 {
			return src, corruptf("short offload context")
		}
		o := &OffloadContext{}
		copy(o.UID[:], src)
		o.Complete, o.BookkeeperDeleted = src[16]&1 != 0, src[16]&2 != 0
		src = src[17:]
		if src, o.Timestamp, err = readVarint(src); err != nil {
			return src, err
		}
		if o.Driver, err = str(); err != nil {
			return src, err
		}
		var np uint64
		if src, np, err = readUvarint(src); err != nil {
			return src, err
		}
		if np > uint64(len(src)) {
			return src, corruptf("%d driver properties in %d bytes", np, len(src))
		}
		if np > 0 {
			o.DriverMetadata = make(map[string]string, np)
		}
		for range np {
			k, err := str()
			if err != nil {
				return src, err
			}
			v, err := str()
			if err != nil {
				return src, err
			}
			o.DriverMetadata[k] = v
		}
		ls[i].Offload = o
	}
	return src, nil
}
