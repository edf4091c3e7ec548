package embedded

import (
	"encoding/binary"
	"fmt"

	"github.com/magnetar-mq/magnetar/metadata"
)

// Bucket names (see doc.go).
var (
	bucketNodes     = []byte("nodes")
	bucketEphemeral = []byte("ephemeral")
	bucketMeta      = []byte("meta")
	keyFormat       = []byte("format")
)

const (
	formatVersion = 1 // value of meta/format and of each record's first byte

	flagEphemeral = 1 << 0

	recordHeaderLen = 26
)

// record is the decoded value of one node in the nodes bucket.
type record struct {
	flags   byte
	version metadata.Version
	nextSeq int64  // next number CreateSequential hands out under this node
	owner   uint64 // session owning an ephemeral node, else 0
	value   []byte // aliases the bolt page until copied
}

func (r *record) ephemeral() bool { return r.flags&flagEphemeral != 0 }

// appendRecord encodes r after dst.
func appendRecord(dst []byte, r *record) []byte {
	dst = append(dst, formatVersion, r.flags)
	dst = binary.BigEndian.AppendUint64(dst, uint64(r.version))
	dst = binary.BigEndian.AppendUint64(dst, uint64(r.nextSeq))
	dst = binary.BigEndian.AppendUint64(dst, r.owner)
	return append(dst, r.value...)
}

// decodeRecord decodes src; r.value aliases src.
func decodeRecord(src []byte) (record, error) {
	if len(src) < recordHeaderLen || src[0] != formatVersion {
		return record{}, fmt.Errorf("%w: %d-byte node record", ErrCorrupt, len(src))
	}
	return record{
		flags:   src[1],
		version: metadata.Version(binary.BigEndian.Uint64(src[2:])),
		nextSeq: int64(binary.BigEndian.Uint64(src[10:])),
		owner:   binary.BigEndian.Uint64(src[18:]),
		value:   src[recordHeaderLen:],
	}, nil
}

// nodeKey returns the nodes-bucket key of a valid path: "/" for the root,
// otherwise parent + "\x00" + name, so that the children of p are exactly
// the keys starting with childPrefix(p), in name order.
func nodeKey(p string) []byte {
	if p == "/" {
		return []byte("/")
	}
	parent, name := metadata.Parent(p), metadata.Base(p)
	k := make([]byte, 0, len(parent)+1+len(name))
	k = append(k, parent...)
	k = append(k, 0)
	return append(k, name...)
}

// childPrefix returns the key prefix shared by the children of p.
func childPrefix(p string) []byte {
	k := make([]byte, 0, len(p)+1)
	k = append(k, p...)
	return append(k, 0)
}

// keyPath turns a nodes-bucket key back into its path.
func keyPath(k []byte) string {
	for i, c := range k {
		if c == 0 {
			return metadata.Join(string(k[:i]), string(k[i+1:]))
		}
	}
	return string(k)
}
