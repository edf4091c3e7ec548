package broker

import (
	"iter"
)

// everyLoaded yields the loaded topics (of namespace ns, or all for ""),
// counted as a walk in b.walks while it runs. It drops each topic from
// its list once yielded, so a topic unloaded during the walk is
// reachable from it only until the walk passes it.
func (b *Broker) everyLoaded(ns string) iter.Seq[*topic] {
	return func(yield func(*topic) bool) {
		defer b.walks.Begin()()
		ts := b.loadedTopics(ns)
		for i, t := range ts {
			ts[i] = nil
			if !yield(t) {
				return
			}
		}
	}
}

// loadedTopics returns the loaded topics, optionally of one namespace.
// A loop over all of them uses everyLoaded instead.
func (b *Broker) loadedTopics(ns string) []*topic {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []*topic
	for _, l := range b.mu.topics {
		select {
		case <-l.done:
		default:
			continue
		}
		if l.t == nil || (ns != "" && l.t.name.NamespaceName() != ns) {
			continue
		}
		out = append(out, l.t)
	}
	return out
}
