package admincli

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// Tiered-storage commands: `topics offload | offload-status` and
// `namespaces set-offload-policies | get-offload-policies |
// remove-offload-policies`, as pulsar-admin names them.

// offloadMessageID picks the message id `topics offload -s` offloads up
// to, as pulsar-admin does: walking the ledgers from the newest, the
// first ledger at which the summed size exceeds keep; every ledger before
// it is offloaded. ok is false when nothing qualifies.
func offloadMessageID(ledgers []struct {
	LedgerID int64 `json:"ledgerId"`
	Size     int64 `json:"size"`
}, keep int64) (ledger int64, ok bool) {
	var sum int64
	for i := len(ledgers) - 1; i >= 0; i-- {
		sum += ledgers[i].Size
		if sum > keep {
			return ledgers[i].LedgerID, true
		}
	}
	return 0, false
}

func adminTopicOffloadCmds(a *adminCLI) []*cobra.Command {
	var threshold, msgID string
	off := topicCmd("offload <topic>", "Offload the topic's closed ledgers to tiered storage", 1, func(p string, _ []string) error {
		var body map[string]any
		switch {
		case msgID != "":
			b, err := messageIDBody(msgID)
			if err != nil {
				return err
			}
			body = b
		case threshold != "":
			keep, err := parseSize(threshold)
			if err != nil {
				return err
			}
			if keep < 0 {
				return fmt.Errorf("--size-threshold must be >= 0")
			}
			data, _, err := a.do("GET", p+"/internalStats", nil)
			if err != nil {
				return err
			}
			var st struct {
				Ledgers []struct {
					LedgerID int64 `json:"ledgerId"`
					Size     int64 `json:"size"`
				} `json:"ledgers"`
			}
			if err := json.Unmarshal(data, &st); err != nil {
				return fmt.Errorf("internal stats: %w", err)
			}
			if len(st.Ledgers) == 0 {
				return fmt.Errorf("topic doesn't have any data")
			}
			l, ok := offloadMessageID(st.Ledgers, keep)
			if !ok {
				fmt.Fprintln(a.out, "Nothing to offload")
				return nil
			}
			body = map[string]any{"ledgerId": l, "entryId": 0, "partitionIndex": -1}
		default:
			return fmt.Errorf("give --size-threshold or --message-id")
		}
		if err := a.write("PUT", p+"/offload", body); err != nil {
			return err
		}
		fmt.Fprintf(a.out, "Offload triggered for %v:%v\n", body["ledgerId"], body["entryId"])
		return nil
	})
	off.Flags().StringVarP(&threshold, "size-threshold", "s", "", "keep at most about this much data on the bookies (e.g. 10M, 1G); offload the rest")
	off.Flags().StringVarP(&msgID, "message-id", "m", "", "offload the ledgers before this message id's ledger (ledger:entry)")

	var wait bool
	status := topicCmd("offload-status <topic>", "Show the status of the topic's last offload", 1, func(p string, _ []string) error {
		for {
			data, _, err := a.do("GET", p+"/offload", nil)
			if err != nil {
				return err
			}
			var s struct {
				Status    string `json:"status"`
				LastError string `json:"lastError"`
				First     struct {
					LedgerID int64 `json:"ledgerId"`
					EntryID  int64 `json:"entryId"`
				} `json:"firstUnoffloadedMessage"`
			}
			if err := json.Unmarshal(data, &s); err != nil {
				return err
			}
			if wait && s.Status == "RUNNING" {
				time.Sleep(time.Second) // polling a REST endpoint: no signal to wait on
				continue
			}
			if a.output == "json" {
				return a.show(data, "")
			}
			switch s.Status {
			case "SUCCESS":
				fmt.Fprintf(a.out, "Offload was a success\nFirst unoffloaded message: %d:%d\n", s.First.LedgerID, s.First.EntryID)
			case "ERROR":
				return fmt.Errorf("offload failed: %s", s.LastError)
			case "RUNNING":
				fmt.Fprintln(a.out, "Offload is currently running")
			default:
				fmt.Fprintln(a.out, "Offload has not been run")
			}
			return nil
		}
	})
	status.Flags().BoolVarP(&wait, "wait-complete", "w", false, "wait for a running offload to finish")
	return []*cobra.Command{off, status}
}

func adminNamespaceOffloadCmds(a *adminCLI, nsCmd func(use, short string, run func(p string, args []string) error) *cobra.Command) []*cobra.Command {
	var (
		driver, region, bucket, endpoint, id, secret, role, fsURI, prio string
		maxBlock, readBuf, thresh, threshSecs, lag                      string
	)
	set := nsCmd("set-offload-policies <tenant/namespace>", "Set the tiered-storage (offload) policies", func(p string, _ []string) error {
		body := map[string]any{}
		str := func(k, v string) {
			if v != "" {
				body[k] = v
			}
		}
		str("managedLedgerOffloadDriver", driver)
		str("s3ManagedLedgerOffloadRegion", region)
		str("s3ManagedLedgerOffloadBucket", bucket)
		str("s3ManagedLedgerOffloadServiceEndpoint", endpoint)
		str("s3ManagedLedgerOffloadCredentialId", id)
		str("s3ManagedLedgerOffloadCredentialSecret", secret)
		str("s3ManagedLedgerOffloadRole", role)
		str("fileSystemURI", fsURI)
		str("managedLedgerOffloadedReadPriority", prio)
		for _, f := range []struct {
			k, v string
			size bool
		}{
			{"s3ManagedLedgerOffloadMaxBlockSizeInBytes", maxBlock, true},
			{"s3ManagedLedgerOffloadReadBufferSizeInBytes", readBuf, true},
			{"managedLedgerOffloadThresholdInBytes", thresh, true},
		} {
			if f.v == "" {
				continue
			}
			n, err := parseSize(f.v)
			if err != nil {
				return err
			}
			body[f.k] = n
		}
		for _, f := range []struct{ k, v string }{
			{"managedLedgerOffloadThresholdInSeconds", threshSecs},
			{"managedLedgerOffloadDeletionLagInMillis", lag},
		} {
			if f.v == "" {
				continue
			}
			ms, err := parseMillis(f.v)
			if err != nil {
				return err
			}
			if f.k == "managedLedgerOffloadThresholdInSeconds" && ms > 0 {
				ms /= 1000
			}
			body[f.k] = ms
		}
		if driver == "" {
			return fmt.Errorf("--driver is required (S3, aws-s3 or filesystem)")
		}
		return a.write("POST", p+"/offloadPolicies", body)
	})
	fl := set.Flags()
	fl.StringVarP(&driver, "driver", "d", "", "S3, aws-s3 or filesystem")
	fl.StringVarP(&region, "region", "r", "", "S3 region")
	fl.StringVarP(&bucket, "bucket", "b", "", "S3 bucket")
	fl.StringVarP(&endpoint, "endpoint", "e", "", "S3 endpoint URL")
	fl.StringVarP(&id, "aws-id", "i", "", "S3 access key")
	fl.StringVarP(&secret, "aws-secret", "s", "", "S3 secret key")
	fl.StringVar(&role, "s3-role", "", "S3 role (recorded; Magnetar uses the keys)")
	fl.StringVar(&fsURI, "fs-uri", "", "filesystem driver directory (file:///dir)")
	fl.StringVar(&maxBlock, "maxBlockSize", "", "data block size (e.g. 64M, at least 5M)")
	fl.StringVar(&readBuf, "readBufferSize", "", "read-ahead size (e.g. 1M)")
	fl.StringVarP(&thresh, "offloadAfterThreshold", "t", "", "offload once the topic holds more than this after a ledger (e.g. 10M; -1 off)")
	fl.StringVar(&threshSecs, "offloadAfterThresholdInSeconds", "", "offload ledgers closed this long ago (e.g. 3600s, 1h; -1 off)")
	fl.StringVar(&lag, "offloadAfterElapsed", "", "delete the bookie copy this long after offloading (e.g. 4h; -1 never)")
	fl.StringVar(&prio, "offloadedReadPriority", "", "tiered-storage-first or bookkeeper-first")
	return []*cobra.Command{
		set,
		nsCmd("get-offload-policies <tenant/namespace>", "Get the offload policies", func(p string, _ []string) error { return a.get(p+"/offloadPolicies", "") }),
		nsCmd("remove-offload-policies <tenant/namespace>", "Remove the offload policies", func(p string, _ []string) error {
			return a.write("DELETE", p+"/removeOffloadPolicies", nil)
		}),
	}
}

// parseMillis accepts -1, a number of milliseconds, or a duration (Go
// syntax or with a d/w suffix).
func parseMillis(s string) (int64, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	if strings.HasSuffix(s, "d") || strings.HasSuffix(s, "w") {
		m, err := parseMinutes(s)
		return int64(m) * 60000, err
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("bad time %q", s)
	}
	return d.Milliseconds(), nil
}
