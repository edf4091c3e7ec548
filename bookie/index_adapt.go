package bookie

import "errors"

// openIndex opens the ledger index in the first ledger directory.
func openIndex(opts *Options) (ledgerIndex, error) {
	return nil, errors.New("bookie: index package not available yet")
}

func isIndexCorrupt(err error) bool { return false }
