package mledger

// ledgerSums holds, per ledger still read by some cursor, the running
// message count of its entries (sums[i]: messages in entries 0..i), for
// backlogs in messages. A managed ledger has a few such ledgers, usually
// one, so they are a slice of pairs rather than a map: a Go map of one
// entry costs ~300 B, and a broker keeps one managed ledger per loaded
// topic.
type ledgerSums []ledgerSum

type ledgerSum struct {
	id   int64
	sums []int64
}

// get returns the sums of ledger id (nil if none).
func (ls ledgerSums) get(id int64) []int64 {
	for i := range ls {
		if ls[i].id == id {
			return ls[i].sums
		}
	}
	return nil
}

// set sets the sums of ledger id, adding it if absent.
func (ls *ledgerSums) set(id int64, sums []int64) {
	for i := range *ls {
		if (*ls)[i].id == id {
			(*ls)[i].sums = sums
			return
		}
	}
	*ls = append(*ls, ledgerSum{id, sums})
}

// del forgets ledger id.
func (ls *ledgerSums) del(id int64) {
	*ls = dropSums(*ls, func(l ledgerSum) bool { return l.id == id })
}

// dropBelow forgets every ledger before id.
func (ls *ledgerSums) dropBelow(id int64) {
	*ls = dropSums(*ls, func(l ledgerSum) bool { return l.id < id })
}

// dropSums deletes the pairs drop picks, clearing the freed tail (the
// sums it held are garbage) and letting the backing array go once empty.
func dropSums(ls ledgerSums, drop func(ledgerSum) bool) ledgerSums {
	n := 0
	for _, l := range ls {
		if !drop(l) {
			ls[n] = l
			n++
		}
	}
	clear(ls[n:])
	if n == 0 {
		return nil
	}
	return ls[:n]
}
