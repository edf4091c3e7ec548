package coordinator

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/magnetar-mq/magnetar/txn"
)

// Stats are a coordinator's figures, shaped like Pulsar's
// TransactionCoordinatorStats plus counters since the coordinator loaded.
type Stats struct {
	State            string `json:"state"`
	LeastSigBits     uint64 `json:"leastSigBits"`
	LowWaterMark     uint64 `json:"lowWaterMark"`
	OngoingTxnSize   int    `json:"ongoingTxnSize"`
	RecoverStartTime int64  `json:"recoverStartTime"`
	RecoverEndTime   int64  `json:"recoverEndTime"`
	CreatedCount     int64  `json:"createdCount"`
	CommittedCount   int64  `json:"committedCount"`
	AbortedCount     int64  `json:"abortedCount"`
	TimeoutCount     int64  `json:"timeoutCount"`
	AppendLogCount   int64  `json:"appendLogCount"`
}

// Stats returns the coordinator's figures. LowWaterMark is the highest
// sequence below which no transaction is live.
func (c *Coordinator) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	seq := c.seq.Load()
	low := seq
	for s := range c.mu.txns {
		if s-1 < low {
			low = s - 1
		}
	}
	state := "Ready"
	if c.mu.closed {
		state = "Closed"
	}
	return Stats{
		State: state, LeastSigBits: seq, LowWaterMark: low, OngoingTxnSize: len(c.mu.txns),
		RecoverStartTime: c.recoverStart, RecoverEndTime: c.recoverEnd,
		CreatedCount: c.stats.created.Load(), CommittedCount: c.stats.committed.Load(),
		AbortedCount: c.stats.aborted.Load(), TimeoutCount: c.stats.timedOut.Load(),
		AppendLogCount: c.stats.appended.Load(),
	}
}

// Info describes one live transaction.
type Info struct {
	ID            txn.ID
	Status        Status
	OpenTimestamp int64 // Unix ms
	Timeout       time.Duration
	Partitions    []string
	Subscriptions []SubRef
}

func (c *Coordinator) info(m *meta) Info {
	return Info{
		ID: txn.ID{Most: c.cfg.ID, Least: m.seq}, Status: m.status, OpenTimestamp: m.openMs,
		Timeout:    time.Duration(min(m.timeoutMs, uint64(1<<63-1)/uint64(time.Millisecond))) * time.Millisecond,
		Partitions: slices.Clone(m.partitions), Subscriptions: slices.Clone(m.subs),
	}
}

// Txn returns a live transaction's description.
func (c *Coordinator) Txn(id txn.ID) (Info, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if id.Most == c.cfg.ID && c.mu.txns[id.Least] == nil {
		if st, ok := c.mu.ended[id.Least]; ok {
			return Info{}, fmt.Errorf("%w: %s has ended (%s)", ErrTxnNotFound, id, st)
		}
	}
	m, err := c.lookup(id)
	if err != nil {
		return Info{}, err
	}
	return c.info(m), nil
}

// Slow lists the live transactions open for at least age, oldest first.
func (c *Coordinator) Slow(age time.Duration) []Info {
	cut := c.now().Add(-age).UnixMilli()
	c.mu.Lock()
	var out []Info
	for _, m := range c.mu.txns {
		if m.openMs <= cut {
			out = append(out, c.info(m))
		}
	}
	c.mu.Unlock()
	slices.SortFunc(out, func(a, b Info) int {
		if c := cmp.Compare(a.OpenTimestamp, b.OpenTimestamp); c != 0 {
			return c
		}
		return cmp.Compare(a.ID.Least, b.ID.Least)
	})
	return out
}
