package main

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// `magnetar admin transactions ...`, named as pulsar-admin's:
// coordinators, coordinator-stats, coordinator-internal-stats,
// transaction-metadata, slow-transactions (the coordinator side), and
// transaction-buffer-stats, transaction-in-buffer-stats,
// pending-ack-stats, transaction-in-pending-ack-stats (the participant
// side of a topic, -t). See docs/transactions.md.

func adminTransactionsCmd() *cobra.Command {
	a := adminOpts
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
	var topic, sub string
	// participant is a participant-side leaf: -t topic (persistent), with
	// -s subscription and/or the txn id when the endpoint has them.
	participant := func(use, short, endpoint string, withSub, withTxn bool) *cobra.Command {
		c := leaf(use, short, 0, func([]string) error {
			p, err := topicPath(topic)
			if err != nil {
				return err
			}
			dom, rest, _ := strings.Cut(p, "/")
			if dom != "persistent" {
				return fmt.Errorf("transactions need a persistent topic: %q", topic)
			}
			path := "/admin/v3/transactions/" + endpoint + "/" + rest
			if withSub {
				path += "/" + url.PathEscape(sub)
			}
			if withTxn {
				path += "/" + strconv.FormatUint(most, 10) + "/" + strconv.FormatUint(least, 10)
			}
			return a.get(path, "")
		})
		c.Flags().StringVarP(&topic, "topic", "t", "", "topic name")
		_ = c.MarkFlagRequired("topic")
		if withSub {
			c.Flags().StringVarP(&sub, "sub-name", "s", "", "subscription name")
			_ = c.MarkFlagRequired("sub-name")
		}
		if withTxn {
			c.Flags().Uint64VarP(&most, "most-sig-bits", "m", 0, "transaction id, most significant bits")
			c.Flags().Uint64VarP(&least, "least-sig-bits", "l", 0, "transaction id, least significant bits")
			_ = c.MarkFlagRequired("most-sig-bits")
			_ = c.MarkFlagRequired("least-sig-bits")
		}
		return c
	}
	return noun("transactions", "Transactions (coordinators, open transactions, topic buffers and pending acks)",
		participant("transaction-buffer-stats", "Stats of a topic's transaction buffer", "transactionBufferStats", false, false),
		participant("transaction-in-buffer-stats", "A transaction's state in a topic's transaction buffer", "transactionInBufferStats", false, true),
		participant("pending-ack-stats", "Stats of a subscription's pending acks", "pendingAckStats", true, false),
		participant("transaction-in-pending-ack-stats", "A transaction's pending acks on a subscription", "transactionInPendingAckStats", true, true),
		leaf("coordinators", "List the transaction coordinators and the broker serving each", 0, func([]string) error {
			return a.get("/admin/v3/transactions/coordinators", "")
		}),
		stats, internal, meta, slow)
}
