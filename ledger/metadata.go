package ledger

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/magnetar-mq/magnetar/metadata"
)

// State is a ledger's lifecycle state.
type State string

// States: OPEN → IN_RECOVERY → CLOSED, or OPEN → CLOSED on a clean close.
const (
	StateOpen       State = "OPEN"
	StateInRecovery State = "IN_RECOVERY"
	StateClosed     State = "CLOSED"
)

// MetadataFormat is the version of the JSON metadata record.
const MetadataFormat = 1

// DigestCRC32C is the only digest type: CRC32C over header and payload.
const DigestCRC32C = "CRC32C"

// Segment is one ensemble: the bookies holding entries from FirstEntry up
// to the next segment's FirstEntry.
type Segment struct {
	FirstEntry int64    `json:"firstEntry"`
	Bookies    []string `json:"bookies"`
}

// Metadata is a ledger's metadata record (JSON, format 1) at LedgerPath.
type Metadata struct {
	Format       int   `json:"format"`
	EnsembleSize int   `json:"ensembleSize"`
	WriteQuorum  int   `json:"writeQuorumSize"`
	AckQuorum    int   `json:"ackQuorumSize"`
	State        State `json:"state"`
	// LastEntryID and Length are final once State is CLOSED (-1/0 for an
	// empty ledger).
	LastEntryID int64 `json:"lastEntryId"`
	Length      int64 `json:"length"`
	// Ensembles is sorted by FirstEntry, the first at 0.
	Ensembles  []Segment         `json:"ensembles"`
	DigestType string            `json:"digestType"`
	Password   []byte            `json:"password"`
	CTime      int64             `json:"ctime"` // Unix milliseconds
	Custom     map[string][]byte `json:"customMetadata,omitempty"`
}

// clone returns a deep copy of the parts of m that mutate.
func (m *Metadata) clone() Metadata {
	c := *m
	c.Ensembles = make([]Segment, len(m.Ensembles))
	for i, s := range m.Ensembles {
		c.Ensembles[i] = Segment{FirstEntry: s.FirstEntry, Bookies: slices.Clone(s.Bookies)}
	}
	return c
}

// EnsembleAt returns the segment holding entry e.
func (m *Metadata) EnsembleAt(e int64) Segment {
	i := len(m.Ensembles) - 1
	for i > 0 && m.Ensembles[i].FirstEntry > e {
		i--
	}
	return m.Ensembles[i]
}

// Last returns the last segment.
func (m Metadata) Last() Segment { return m.Ensembles[len(m.Ensembles)-1] }

func (m *Metadata) validate() error {
	if m.Format != MetadataFormat {
		return fmt.Errorf("%w: format %d", ErrBadMetadata, m.Format)
	}
	if !(m.EnsembleSize >= m.WriteQuorum && m.WriteQuorum >= m.AckQuorum && m.AckQuorum >= 1) || m.EnsembleSize > 64 {
		return fmt.Errorf("%w: E=%d Qw=%d Qa=%d", ErrBadMetadata, m.EnsembleSize, m.WriteQuorum, m.AckQuorum)
	}
	if len(m.Ensembles) == 0 || m.Ensembles[0].FirstEntry != 0 {
		return fmt.Errorf("%w: no ensemble at entry 0", ErrBadMetadata)
	}
	for i, s := range m.Ensembles {
		if len(s.Bookies) != m.EnsembleSize || (i > 0 && s.FirstEntry <= m.Ensembles[i-1].FirstEntry) {
			return fmt.Errorf("%w: ensemble %d", ErrBadMetadata, i)
		}
	}
	switch m.State {
	case StateOpen, StateInRecovery, StateClosed:
	default:
		return fmt.Errorf("%w: state %q", ErrBadMetadata, m.State)
	}
	return nil
}

func encodeMetadata(m *Metadata) []byte {
	b, err := json.Marshal(m)
	if err != nil {
		panic("BUG: ledger metadata does not marshal: " + err.Error())
	}
	return b
}

func decodeMetadata(b []byte) (Metadata, error) {
	var m Metadata
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("%w: %v", ErrBadMetadata, err)
	}
	return m, m.validate()
}

// Paths in the metadata store.
const (
	// LedgersRoot holds ledger metadata, bookie registrations and cookies.
	LedgersRoot = "/ledgers"
	// AvailablePath holds one ephemeral node per writable bookie;
	// ReadOnlyPath one per read-only bookie.
	AvailablePath = "/ledgers/available"
	ReadOnlyPath  = "/ledgers/available/readonly"
	idGenPrefix   = "/ledgers/idgen/ID-"
)

// LedgerPath returns the hierarchical metadata path of ledger id: the id
// zero-padded to 10 digits split 2/4/4, "/ledgers/00/0000/L0123" for 123.
// Longer ids keep all leading digits in the first component.
func LedgerPath(id int64) string {
	s := fmt.Sprintf("%010d", id)
	n := len(s)
	return LedgersRoot + "/" + s[:n-8] + "/" + s[n-8:n-4] + "/L" + s[n-4:]
}

// ParseLedgerPath returns the id of a path made by LedgerPath.
func ParseLedgerPath(p string) (int64, bool) {
	rest, ok := strings.CutPrefix(p, LedgersRoot+"/")
	if !ok {
		return 0, false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 3 || len(parts[1]) != 4 || len(parts[2]) != 5 || parts[2][0] != 'L' {
		return 0, false
	}
	id, err := strconv.ParseInt(parts[0]+parts[1]+parts[2][1:], 10, 64)
	return id, err == nil
}

// MasterKey derives the key bookies check from a ledger's password:
// SHA-256 of "magnetar-ledger\x00" followed by the password.
func MasterKey(password []byte) []byte {
	h := sha256.New()
	h.Write([]byte("magnetar-ledger\x00"))
	h.Write(password)
	return h.Sum(nil)
}

// readMetadata reads and decodes ledger id's record.
func readMetadata(ctx context.Context, s metadata.Store, id int64) (Metadata, metadata.Version, error) {
	b, v, err := s.Get(ctx, LedgerPath(id))
	if errors.Is(err, metadata.ErrNotFound) {
		return Metadata{}, 0, fmt.Errorf("%w: %d", ErrNoSuchLedger, id)
	}
	if err != nil {
		return Metadata{}, 0, err
	}
	m, err := decodeMetadata(b)
	return m, v, err
}

// writeSet returns the ensemble indexes of entry e's write set.
func writeSet(e int64, ensemble, wq int) []int {
	ws := make([]int, wq)
	for i := range ws {
		ws[i] = int((e + int64(i)) % int64(ensemble))
	}
	return ws
}

// inWriteSet reports whether ensemble index idx stores entry e.
func inWriteSet(e int64, idx, ensemble, wq int) bool {
	d := (int64(idx) - e%int64(ensemble) + int64(ensemble)) % int64(ensemble)
	return d < int64(wq)
}
