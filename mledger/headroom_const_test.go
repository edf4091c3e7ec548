package mledger_test

import (
	"github.com/magnetar-mq/magnetar/ledger"
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/protocol/bkproto"
)

// The headroom the broker leaves must be exactly the room the ledger writes
// its BookKeeper entry header into, or every add falls back to a copy.
// Checked at compile time: an array length may not be negative, so the
// test package does not build unless the constants are equal.
var (
	_ [mledger.EntryHeadroom - bkproto.EntryHeaderSize]struct{}
	_ [bkproto.EntryHeaderSize - mledger.EntryHeadroom]struct{}
	_ [mledger.EntryHeadroom - ledger.EntryHeadroom]struct{}
	_ [ledger.EntryHeadroom - mledger.EntryHeadroom]struct{}
)
