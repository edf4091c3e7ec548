package mledger

import "maps"

// Info properties: a few string pairs stored in the managed ledger's info
// node (flag bit 3, codec.go), like the properties Pulsar keeps on a
// managed ledger. A user of the ledger registers a hook; it runs every
// time the info is written (ledger rollover, trimming, compaction and
// offload updates) and sets the values to store, so they are as recent
// as the last info write and survive the ledgers they describe (e.g. the
// broker's message index when every ledger holding an entry was trimmed).

// SetInfoPropertiesHook registers fn (nil: none). fn runs with the info
// lock held: it must not call into the managed ledger, nor block; it may
// set or delete keys of props. At most 64 properties are kept.
func (ml *ManagedLedger) SetInfoPropertiesHook(fn func(props map[string]string)) {
	if fn == nil {
		ml.propsHook.Store(nil)
		return
	}
	ml.propsHook.Store(&fn)
}

// InfoProperties returns a copy of the properties of the info as last
// read or written.
func (ml *ManagedLedger) InfoProperties() map[string]string {
	ml.infoMu.Lock()
	defer ml.infoMu.Unlock()
	if ml.info == nil {
		return map[string]string{}
	}
	out := maps.Clone(ml.info.props)
	if out == nil {
		out = map[string]string{}
	}
	return out
}

// stampProps lets the hook update next's properties before it is written.
func (ml *ManagedLedger) stampProps(next *mlInfo) {
	hook := ml.propsHook.Load()
	if hook == nil {
		return
	}
	fn := *hook
	if next.props == nil {
		next.props = map[string]string{}
	}
	fn(next.props)
	for k := range next.props {
		if len(next.props) <= maxInfoProps {
			break
		}
		delete(next.props, k)
	}
	if len(next.props) == 0 {
		next.props = nil
	}
}
