package embedded

import "errors"

var (
	// ErrCorrupt: a record in the database file does not decode. Final: the
	// file was damaged or written by an incompatible version.
	ErrCorrupt = errors.New("embedded: corrupt record")
)
