package admincli

import (
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/spf13/cobra"
)

// `magnetar admin transactions ...`, named as pulsar-admin's:
// coordinators, coordinator-stats, coordinator-internal-stats,
// transaction-metadata, slow-transactions (the coordinator side; see
// docs/transactions.md); the participant side is in
// admin_transactions_participants.go.

func adminTransactionsCmd(a *adminCLI) *cobra.Command {
	var coord int64 = -1
	var most, least uint64
	var age time.Duration
	coordQuery := func() string {
		if coord < 0 {
			return ""
		}
		return "?coordinatorId=" + strconv.FormatInt(coord, 10)
	}
	stats := leaf("coordinator-stats", "Stats of one transaction coordinator (-c) or of all", 0, func([]string) error {
		return a.get("/admin/v3/transactions/coordinatorStats"+coordQuery(), "")
	})
	stats.Flags().Int64VarP(&coord, "coordinator-id", "c", -1, "coordinator id (default: all)")
	internal := leaf("coordinator-internal-stats", "Internal stats of a coordinator's transaction log", 0, func([]string) error {
		if coord < 0 {
			return fmt.Errorf("give the coordinator id with -c")
		}
		return a.get("/admin/v3/transactions/coordinatorInternalStats/"+strconv.FormatInt(coord, 10), "")
	})
	internal.Flags().Int64VarP(&coord, "coordinator-id", "c", -1, "coordinator id")
	meta := leaf("transaction-metadata", "Metadata of an open transaction", 0, func([]string) error {
		return a.get("/admin/v3/transactions/transactionMetadata/"+url.PathEscape(strconv.FormatUint(most, 10))+"/"+
			strconv.FormatUint(least, 10), "")
	})
	meta.Flags().Uint64VarP(&most, "most-sig-bits", "m", 0, "transaction id, most significant bits (the coordinator id)")
	meta.Flags().Uint64VarP(&least, "least-sig-bits", "l", 0, "transaction id, least significant bits")
	_ = meta.MarkFlagRequired("most-sig-bits")
	_ = meta.MarkFlagRequired("least-sig-bits")
	slow := leaf("slow-transactions", "Transactions open for longer than -t", 0, func([]string) error {
		if age < 0 {
			return fmt.Errorf("--time must not be negative")
		}
		return a.get("/admin/v3/transactions/slowTransactions/"+strconv.FormatInt(age.Milliseconds(), 10)+coordQuery(), "")
	})
	slow.Flags().Int64VarP(&coord, "coordinator-id", "c", -1, "coordinator id (default: all)")
	slow.Flags().DurationVarP(&age, "time", "t", 0, "minimum age, e.g. 1s, 5m")
	_ = slow.MarkFlagRequired("time")
	coords := leaf("coordinators", "List the transaction coordinators and the broker serving each", 0, func([]string) error {
		return a.get("/admin/v3/transactions/coordinators", "")
	})
	return noun("transactions", "Transactions (coordinators, open transactions, buffers and pending acks)",
		append([]*cobra.Command{coords, stats, internal, meta, slow}, adminTxnParticipantCmds(a)...)...)
}
