package embedded

import "github.com/magnetar-mq/magnetar/internal/corrupt"

// ErrCorrupt: a record in the database file does not decode. Final: the
// file was damaged or written by an incompatible version.
var ErrCorrupt = corrupt.New("embedded: corrupt record")
