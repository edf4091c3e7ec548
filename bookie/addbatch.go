package bookie

import (
	"fmt"
	"sync"

	"github.com/magnetar-mq/magnetar/entrylog"
	"github.com/magnetar-mq/magnetar/journal"
)

// Add is one entry of AddEntries: the arguments of an AddEntry call.
type Add struct {
	Ledger, Entry int64
	MasterKey     []byte
	Payload       []byte
	Recovery      bool
	Done          func(error)
}

// batchMax bounds the adds AddEntries handles under one hold of the
// locks (the size of a run's pooled scratch arrays and of a runOp).
const batchMax = 64

// AddEntries is AddEntry for each of adds, in order, with AddEntry's
// guarantees for each: its Done runs exactly once, successful adds of a
// ledger complete in order, and each entry is readable when AddEntries
// returns. Consecutive small adds (payload under journal.RefMinPayload)
// to the same ledger with the same recovery flag form a run that takes
// the close lock, the ledger's lock, the write cache's lock and the
// journal's queue lock once instead of once per add, which is where a
// bookie server reading many adds per network read spends its CPU; a
// run's adds complete together, when its last journal record is durable.
// adds is not retained; the payloads are copied before AddEntries
// returns.
func (b *Bookie) AddEntries(adds []Add) {
	start := journal.Nanotime()
	for i := 0; i < len(adds); {
		a := &adds[i]
		k := i + 1
		if len(a.Payload) < journal.RefMinPayload {
			for k < len(adds) && k-i < batchMax && adds[k].Ledger == a.Ledger && adds[k].Recovery == a.Recovery && len(adds[k].Payload) < journal.RefMinPayload {
				k++
			}
		}
		if k-i == 1 {
			if err := b.addEntry(a.Ledger, a.Entry, a.MasterKey, a.Payload, a.Recovery, a.Done, start); err != nil {
				a.Done(err)
			}
		} else {
			b.addRun(adds[i:k], start)
		}
		i = k
	}
}

// runScratch holds addRun's per-run arrays (pooled: slices of them
// reach the journal through an interface, so they would not stay on the
// stack). The accepted adds are compacted to the front.
type runScratch struct {
	idx      [batchMax]int // index in the run
	entries  [batchMax]int64
	payloads [batchMax][]byte
	pcrcs    [batchMax]uint32
	recs     [batchMax]journal.Record
	comps    [batchMax]journal.Completion
	refused  [batchMax]error // per index in the run: why it was refused
	nRefused int
}

var runScratchPool = sync.Pool{New: func() any { return new(runScratch) }}

// addRun adds run (at most batchMax small adds to one ledger, one
// recovery flag) as addEntry would one at a time, then completes the
// refused ones outside the locks.
func (b *Bookie) addRun(run []Add, start int64) {
	sc := runScratchPool.Get().(*runScratch)
	b.addRunLocked(run, start, sc)
	if sc.nRefused > 0 {
		for i := range run {
			if err := sc.refused[i]; err != nil {
				sc.refused[i] = nil
				run[i].Done(err)
			}
		}
		sc.nRefused = 0
	}
	clear(sc.payloads[:len(run)])
	clear(sc.recs[:len(run)])
	clear(sc.comps[:len(run)])
	runScratchPool.Put(sc)
}

func (sc *runScratch) refuse(i int, err error) {
	sc.refused[i] = err
	sc.nRefused++
}

// refuseAll refuses the first n adds not refused yet.
func (sc *runScratch) refuseAll(n int, err error) {
	for i := range n {
		if sc.refused[i] == nil {
			sc.refuse(i, err)
		}
	}
}

func (b *Bookie) addRunLocked(run []Add, start int64, sc *runScratch) {
	ledger, recovery := run[0].Ledger, run[0].Recovery
	bad := 0
	for i := range run {
		if a := &run[i]; ledger < 0 || a.Entry < 0 || len(a.MasterKey) == 0 {
			sc.refuse(i, fmt.Errorf("%w: ledger %d entry %d, master key %d bytes", ErrBadRequest, ledger, a.Entry, len(a.MasterKey)))
			bad++
		}
	}
	if bad == len(run) {
		return
	}
	b.closeMu.RLock()
	defer b.closeMu.RUnlock()
	if b.closed.Load() {
		sc.refuseAll(len(run), ErrClosed)
		return
	}
	if err := b.writable(recovery); err != nil {
		sc.refuseAll(len(run), err)
		return
	}
	for i := range run {
		sc.pcrcs[i] = entrylog.PayloadCRC(run[i].Payload) // outside the ledger's lock
	}
	st, err := b.lockLedger(ledger, true)
	if err != nil {
		sc.refuseAll(len(run), err)
		return
	}
	defer st.mu.Unlock()
	// The checks of addEntry, in its order, per add.
	n, bytes := 0, 0
	for i := range run {
		a := &run[i]
		if sc.refused[i] != nil {
			continue
		}
		if err := b.checkKeyLocked(st, ledger, a.MasterKey); err != nil {
			sc.refuse(i, err)
			continue
		}
		if st.meta.fenced && !recovery {
			sc.refuse(i, ErrFenced)
			continue
		}
		sc.idx[n], sc.entries[n], sc.payloads[n], sc.pcrcs[n] = i, a.Entry, a.Payload, sc.pcrcs[i]
		n++
		bytes += len(a.Payload)
	}
	if n == 0 {
		return
	}
	// addEntry spends the disk budget per add; the run spends it once.
	if b.diskBudget.Add(-2*int64(bytes)-2*journalRecordOverhead*int64(n)) <= 0 {
		b.kickDiskCheck()
	}
	// Cache first, journal second, as addEntry: every add of the run is
	// cached before any of its journal records is queued, so a
	// checkpoint mark never covers a record whose data it does not flush.
	cached := b.wc.putBatch(ledger, sc.entries[:n], sc.payloads[:n], sc.pcrcs[:n])
	m := cached
	for j := cached; j < n; j++ {
		if _, _, err := b.wc.putRef(ledger, sc.entries[j], sc.payloads[j], sc.pcrcs[j], false, b.opts.WriteCacheMaxWait, b.closing); err != nil {
			sc.refuse(sc.idx[j], err)
			continue
		}
		sc.idx[m], sc.entries[m], sc.payloads[m], sc.pcrcs[m] = sc.idx[j], sc.entries[j], sc.payloads[j], sc.pcrcs[j]
		m++
	}
	if m == 0 {
		return
	}
	op := runOpPool.Get().(*runOp)
	op.b, op.start, op.n = b, start, m
	for j := range m {
		if sc.entries[j] > st.lastEntry {
			st.lastEntry = sc.entries[j]
		}
		op.done[j] = run[sc.idx[j]].Done
		sc.recs[j] = journal.Record{Type: journal.Entry, LedgerID: ledger, EntryID: sc.entries[j], Payload: sc.payloads[j]}
		sc.comps[j] = nil
	}
	// The run's last record carries its completion: records complete in
	// order, so when it runs every add of the run is durable.
	sc.comps[m-1] = op
	if b.tracer != nil && b.tracer.sample(m) {
		// The run's last add: the one whose callback waits for all the
		// others'.
		op.traced = true
		op.st = stageStamps{start: start, cached: journal.Nanotime()}
		sc.recs[m-1].Appended = &op.st.appended
	}
	b.j.AppendBatchWithCRC(sc.recs[:m], sc.pcrcs[:m], sc.comps[:m])
}

// runOp completes one run: one pooled object per run where addEntry takes
// an addOp per add. It is the completion of the run's last journal record
// only (the others have none): records complete in order, so when it runs
// every add of the run is durable, or the journal failed. It observes the
// add latency once for the run and calls the adds' callbacks in order.
// A run split over two groups (the journal's queue filled in between)
// acknowledges its first adds with the second group.
type runOp struct {
	b      *Bookie
	start  int64 // journal.Nanotime at the AddEntries call (add latency)
	n      int
	traced bool        // the last add's stages are sampled (st)
	st     stageStamps // of the traced add
	done   [batchMax]func(error)
}

var runOpPool = sync.Pool{New: func() any { return new(runOp) }}

func (r *runOp) AppendDone(_ journal.Position, err error) {
	b, n := r.b, r.n
	if err != nil {
		b.journalFailed(err)
	} else {
		b.m.addLatency.ObserveN(b.m.durableAt()-r.start, uint64(n))
	}
	for i := range n - 1 {
		r.done[i](err)
		r.done[i] = nil
	}
	if r.traced && err == nil {
		b.tracer.record(&r.st, b.j.(groupTimer).CompletingGroup(), journal.Nanotime())
	}
	last := r.done[n-1]
	r.done[n-1] = nil
	r.b, r.n, r.traced = nil, 0, false
	runOpPool.Put(r)
	last(err)
}
