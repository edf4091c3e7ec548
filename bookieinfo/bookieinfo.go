package bookieinfo

// Source is what the admin API, the console and /metrics need to know
// about the storage nodes. The wiring hands one to each (admin.Deps,
// console.BrokerSource, brokermetrics.Options); nil means "no bookie
// information" (the bookie endpoints answer an empty list).
type Source interface {
	// Bookies lists the known bookies.
	Bookies() []Status
}

// Status is one bookie as the admin API reports it.
type Status struct {
	BookieID string `json:"bookieId"`
	// ReadOnly is true when the bookie refuses new writes.
	ReadOnly bool `json:"readOnly"`
	// Stats are optional numeric gauges/counters exported on /metrics as
	// bookie_<name>{bookie="<id>"} (e.g. "journal_fsync_latency_ms_avg",
	// "group_commit_size_avg", "add_latency_ms_avg", "cache_hit_ratio").
	Stats map[string]float64 `json:"-"`
}

// Local adapts one in-process bookie to Source (the standalone's):
// ReadOnly reports its state, Stats (optional) its numeric stats for
// /metrics.
type Local struct {
	ID       string
	ReadOnly func() bool
	Stats    func() map[string]float64
}

// Bookies implements Source.
func (l Local) Bookies() []Status {
	s := Status{BookieID: l.ID}
	if l.ReadOnly != nil {
		s.ReadOnly = l.ReadOnly()
	}
	if l.Stats != nil {
		s.Stats = l.Stats()
	}
	return []Status{s}
}
