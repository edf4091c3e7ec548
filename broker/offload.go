package broker

import (
	"errors"
	"log/slog"
	"slices"
	"strings"

	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/policy"
)

// OffloadDefaults are the broker-wide tiered-storage settings, under
// Pulsar's broker keys; a namespace's offload policies override them
// field by field.
type OffloadDefaults struct {
	// Properties are the connection settings by Pulsar name
	// (managedLedgerOffloadDriver, s3ManagedLedgerOffloadBucket, ...,
	// fileSystemURI; see package offload). No driver: no offloader
	// unless a namespace names one.
	Properties map[string]string
	// ThresholdBytes (managedLedgerOffloadAutoTriggerSizeThresholdBytes)
	// and ThresholdSeconds (managedLedgerOffloadThresholdInSeconds): -1
	// disables.
	ThresholdBytes, ThresholdSeconds int64
	// DeletionLagMs (managedLedgerOffloadDeletionLagMs): 4 h by default;
	// negative never deletes the bookie copy.
	DeletionLagMs int64
	// ReadPriority (managedLedgerDataReadPriority): policy.ReadTieredFirst
	// or policy.ReadBookkeeperFirst.
	ReadPriority string
	// AllowedFileSystemRoots (offloadAllowedFileSystemRoots) and
	// AllowedServiceEndpoints (offloadAllowedServiceEndpoints) are where
	// namespace and topic offload policies may point besides the
	// broker's own directory and endpoint (see policy.OffloadAllowed).
	AllowedFileSystemRoots, AllowedServiceEndpoints []string
}

// Allowed is the allow-list of offload locations for policies set
// below the broker: the configured roots and endpoints plus the broker's
// own (none for a nil d).
func (d *OffloadDefaults) Allowed() policy.OffloadAllowed {
	if d == nil {
		return policy.OffloadAllowed{}
	}
	a := policy.OffloadAllowed{
		FileSystemRoots:  slices.Clone(d.AllowedFileSystemRoots),
		ServiceEndpoints: slices.Clone(d.AllowedServiceEndpoints),
	}
	for k, v := range d.Properties {
		if v = strings.TrimSpace(v); v == "" {
			continue
		}
		switch k {
		case "fileSystemURI":
			a.FileSystemRoots = append(a.FileSystemRoots, v)
		case "s3ManagedLedgerOffloadServiceEndpoint", "managedLedgerOffloadServiceEndpoint":
			a.ServiceEndpoints = append(a.ServiceEndpoints, v)
		case "fileSystemProfilePath":
			a.ProfilePaths = append(a.ProfilePaths, v)
		}
	}
	return a
}

// DefaultOffload are Pulsar's broker defaults: no driver, both
// thresholds off, a 4 h deletion lag, tiered-storage-first reads.
func DefaultOffload() OffloadDefaults {
	return OffloadDefaults{ThresholdBytes: -1, ThresholdSeconds: -1, DeletionLagMs: 4 * 3600 * 1000, ReadPriority: policy.ReadTieredFirst}
}

// offloadable is what the managed-ledger adapter offers for tiered
// storage (test fakes need not); the stats report an offloadable
// ledger's offload figures. Package tiered drives it.
type offloadable interface {
	SetOffloadPolicy(mledger.OffloadPolicy)
	StartOffload(mledger.Position) error
	OffloadStatus() mledger.OffloadStatus
}

// OffloadStatus is Pulsar's OffloadProcessStatus.
type OffloadStatus struct {
	Status                  string    `json:"status"`
	LastError               string    `json:"lastError"`
	FirstUnoffloadedMessage MessageID `json:"-"`
}

// entryReadError maps a failed admin read of a topic's entry: an
// unreachable object store (or a missing offloader) is ErrUnavailable
// with a reason that names no endpoint, bucket or path (the cause, which
// may, goes to the log); anything else "Message not found" (the cause,
// which names ledgers and storage layers, is logged at debug level).
func entryReadError(log *slog.Logger, err error) error {
	switch {
	case errors.Is(err, mledger.ErrOffloadStoreUnavailable):
		log.Warn("reading offloaded data failed", "err", err)
		return reason(ErrUnavailable, "Offloaded data cannot be read now: object store unavailable")
	case errors.Is(err, mledger.ErrNoOffloader):
		log.Warn("reading offloaded data failed", "err", err)
		return reason(ErrUnavailable, "Offloaded data cannot be read: no offloader configured")
	}
	log.Debug("admin read of an entry failed", "err", err)
	return reason(ErrTopicNotFound, "Message not found")
}
