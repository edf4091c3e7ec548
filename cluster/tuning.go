package cluster

import "time"

// Tuning are the Options of load shedding, bundle splits and failure
// domains, which a dynamic configuration update (Pulsar's
// loadBalancer* keys and failureDomainsEnabled) changes on a running
// Service.
type Tuning struct {
	ShedInterval                       time.Duration // <= 0: never
	ShedGrace                          time.Duration
	SplitMaxTopics, SplitMaxSessions   int
	SplitMaxMsgRate, SplitMaxBytesRate float64
	DisableAutoSplit                   bool
	FailureDomainsEnabled              bool
}

// Tuning returns the tuning in force.
func (s *Service) Tuning() Tuning {
	s.tuneMu.RLock()
	defer s.tuneMu.RUnlock()
	return s.tuning
}

// Retune puts t in force: the next shedding and split pass uses it, and
// a new ShedInterval restarts the shedding period from now.
func (s *Service) Retune(t Tuning) {
	s.tuneMu.Lock()
	s.tuning = t
	s.tuneMu.Unlock()
	select {
	case s.retuned <- struct{}{}:
	default: // the loop has one to take already
	}
}

func tuningOf(o *Options) Tuning {
	return Tuning{ShedInterval: o.ShedInterval, ShedGrace: o.ShedGrace,
		SplitMaxTopics: o.SplitMaxTopics, SplitMaxSessions: o.SplitMaxSessions,
		SplitMaxMsgRate: o.SplitMaxMsgRate, SplitMaxBytesRate: o.SplitMaxBytesRate,
		DisableAutoSplit: o.DisableAutoSplit, FailureDomainsEnabled: o.FailureDomainsEnabled}
}
