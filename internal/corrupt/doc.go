// Package corrupt is the one marker the storage packages share for bytes
// that cannot be what Magnetar wrote: a bad magic, version or checksum, a
// record that names another ledger or entry, a frame or payload that
// does not decode. Each package keeps its own sentinel (journal.ErrCorrupt,
// entrylog.ErrCorrupt, index.ErrCorrupt, …), made with New, so its text
// and errors.Is against it stay as they were; errors.Is(err, corrupt.Err)
// holds for every one of them, wrapped or not, so a caller above several
// storage packages (the bookie turning read-only, a repair tool) asks
// one question instead of one per package.
//
// Invariants: a sentinel made by New is comparable and unique (errors.Is
// against another package's sentinel is false); At wraps one with the
// file path and byte offset where the corruption was found, which the
// standards require of every report of a corrupt file.
package corrupt
