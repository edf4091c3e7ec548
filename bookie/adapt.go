package bookie

import "errors"

// errStorageCorrupt marks corruption reported by a storage fake in tests.
var errStorageCorrupt = errors.New("bookie: storage corrupt")

func isCorrupt(err error) bool { return errors.Is(err, errStorageCorrupt) }

func isNotFound(err error) bool { return false }

func isClosedErr(err error) bool { return false }

func openStorage(opts *Options) (storageSet, error) {
	return storageSet{}, errors.New("bookie: storage not wired yet")
}
