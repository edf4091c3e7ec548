package admincli

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

// `magnetar admin transactions ...`, the participant side, named as
// pulsar-admin's: transaction-buffer-stats, transaction-in-buffer-stats,
// pending-ack-stats, transaction-in-pending-ack-stats (-t topic, -s
// subscription, -m/-l the transaction id).

// txnTopicPath is the tenant/namespace/topic part of the
// /admin/v3/transactions paths (persistent topics only).
func txnTopicPath(name string) (string, error) {
	p, err := topicPath(name)
	if err != nil {
		return "", err
	}
	rest, ok := strings.CutPrefix(p, "persistent/")
	if !ok {
		return "", fmt.Errorf("transactions need a persistent topic: %q", name)
	}
	return rest, nil
}

func adminTxnParticipantCmds(a *adminCLI) []*cobra.Command {
	var topic, sub string
	var most, least uint64
	idPath := func() string {
		return "/" + strconv.FormatUint(most, 10) + "/" + strconv.FormatUint(least, 10)
	}
	withTopic := func(use, short string, needSub, needID bool, path func(tp string) string) *cobra.Command {
		c := leaf(use, short, 0, func([]string) error {
			tp, err := txnTopicPath(topic)
			if err != nil {
				return err
			}
			return a.get("/admin/v3/transactions/"+path(tp), "")
		})
		c.Flags().StringVarP(&topic, "topic", "t", "", "topic name")
		_ = c.MarkFlagRequired("topic")
		if needSub {
			c.Flags().StringVarP(&sub, "sub-name", "s", "", "subscription name")
			_ = c.MarkFlagRequired("sub-name")
		}
		if needID {
			c.Flags().Uint64VarP(&most, "most-sig-bits", "m", 0, "transaction id, most significant bits (the coordinator id)")
			c.Flags().Uint64VarP(&least, "least-sig-bits", "l", 0, "transaction id, least significant bits")
			_ = c.MarkFlagRequired("most-sig-bits")
			_ = c.MarkFlagRequired("least-sig-bits")
		}
		return c
	}
	return []*cobra.Command{
		withTopic("transaction-buffer-stats", "Transaction buffer stats of a topic", false, false, func(tp string) string {
			return "transactionBufferStats/" + tp
		}),
		withTopic("transaction-in-buffer-stats", "What a topic's transaction buffer knows of one transaction", false, true, func(tp string) string {
			return "transactionInBufferStats/" + tp + idPath()
		}),
		withTopic("pending-ack-stats", "Pending-ack stats of a subscription", true, false, func(tp string) string {
			return "pendingAckStats/" + tp + "/" + url.PathEscape(sub)
		}),
		withTopic("transaction-in-pending-ack-stats", "What one transaction holds on a subscription", true, true, func(tp string) string {
			return "transactionInPendingAckStats/" + tp + "/" + url.PathEscape(sub) + idPath()
		}),
	}
}
