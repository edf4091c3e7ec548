package broker

import (
	"math"

	"github.com/magnetar-mq/magnetar/broker/storage"
)

// The core's short names for package broker/storage's types.
type (
	cursor          = storage.Cursor
	position        = storage.Position
	ledgerEntry     = storage.LedgerEntry
	initialPosition = storage.InitialPosition
)

var (
	// posEarliest is Pulsar's (-1,-1) "first retained entry" sentinel.
	posEarliest = position{LedgerID: -1, EntryID: -1}
	// posLatest is Pulsar's (MaxInt64, MaxInt64) "after the last entry".
	posLatest = position{LedgerID: math.MaxInt64, EntryID: math.MaxInt64}
)

const (
	initialLatest   = storage.InitialLatest
	initialEarliest = storage.InitialEarliest
)
