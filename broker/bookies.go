package broker

// BookieInfo is what the admin API and /metrics need to know about the
// storage nodes. The cmd wiring fills Deps.Bookies; nil means "no bookie
// information" (the bookie endpoints answer an empty list).
type BookieInfo interface {
	// Bookies lists the known bookies.
	Bookies() []BookieStatus
}

// BookieStatus is one bookie as the admin API reports it.
type BookieStatus struct {
	BookieID string `json:"bookieId"`
	// ReadOnly is true when the bookie refuses new writes.
	ReadOnly bool `json:"readOnly"`
	// Stats are optional numeric gauges/counters exported on /metrics as
	// bookie_<name>{bookie="<id>"} (e.g. "journal_fsync_latency_ms_avg",
	// "group_commit_size_avg", "add_latency_ms_avg", "cache_hit_ratio").
	Stats map[string]float64 `json:"-"`
}

// LocalBookie adapts one in-process bookie to BookieInfo (the
// standalone's): ReadOnly reports its state, Stats (optional) its
// numeric stats for /metrics.
type LocalBookie struct {
	ID       string
	ReadOnly func() bool
	Stats    func() map[string]float64
}

// Bookies implements BookieInfo.
func (l LocalBookie) Bookies() []BookieStatus {
	s := BookieStatus{BookieID: l.ID}
	if l.ReadOnly != nil {
		s.ReadOnly = l.ReadOnly()
	}
	if l.Stats != nil {
		s.Stats = l.Stats()
	}
	return []BookieStatus{s}
}
