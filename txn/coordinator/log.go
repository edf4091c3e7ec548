package coordinator

import (
	"context"
	"fmt"
)

// Pos is a record's position in the log: ledger id, entry id.
type Pos struct {
	Ledger int64
	Entry  int64
}

// Less orders positions as the log does.
func (p Pos) Less(q Pos) bool {
	return p.Ledger < q.Ledger || (p.Ledger == q.Ledger && p.Entry < q.Entry)
}

func (p Pos) String() string { return fmt.Sprintf("%d:%d", p.Ledger, p.Entry) }

// Log is a coordinator's durable, append-only record log (the broker backs
// it with a managed ledger of its own).
type Log interface {
	// Append stores rec. cb runs once rec is durable (or failed), in
	// Append order; it may run before Append returns.
	Append(rec []byte, cb func(Pos, error))
	// Replay calls fn with every retained record, oldest first.
	Replay(ctx context.Context, fn func(Pos, []byte) error) error
	// TrimBefore declares every record before p (p excluded) no longer
	// needed; storage may delete them.
	TrimBefore(ctx context.Context, p Pos) error
	// Close releases the log; appends in flight complete first.
	Close() error
}
