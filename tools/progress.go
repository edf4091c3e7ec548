package tools

import "sync/atomic"

// Progress receives the progress of a long operation. Start is called
// once with the total (-1: unknown) in items or, with bytes set, in
// bytes; Set reports the amount done (possibly from several goroutines);
// Finish ends it.
type Progress interface {
	Start(total int64, what string, bytes bool)
	Set(done int64)
	Finish()
}

type noProgress struct{}

func (noProgress) Start(int64, string, bool) {}
func (noProgress) Set(int64)                 {}
func (noProgress) Finish()                   {}

func orNone(p Progress) Progress {
	if p == nil {
		return noProgress{}
	}
	return p
}

// counter counts items done on a Progress; add is safe for concurrent
// use.
type counter struct {
	p    Progress
	done atomic.Int64
}

func (c *counter) add(n int) { c.p.Set(c.done.Add(int64(n))) }
