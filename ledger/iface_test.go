package ledger_test

import (
	"github.com/magnetar-mq/magnetar/bookie/server"
	"github.com/magnetar-mq/magnetar/ledger"
	"github.com/magnetar-mq/magnetar/mledger"
)

// The handles satisfy what the managed ledger expects, so cmd wires
// mledger onto this client with a thin LedgerStore adapter.
var (
	_ mledger.WriteLedger  = (*ledger.WriteHandle)(nil)
	_ mledger.ReadLedger   = (*ledger.ReadHandle)(nil)
	_ ledger.BookieClient  = (*server.Local)(nil)
	_ ledger.LocalClient   = (*server.Local)(nil)
	_ ledger.LedgerDeleter = (*server.Local)(nil)
)
