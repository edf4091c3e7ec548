package policy

import (
	"slices"
	"strings"
)

// OffloadDefaults are the broker-wide tiered-storage settings, under
// Pulsar's broker keys (brokerconf.Config.Offload; package tiered applies
// them); a namespace's offload policies override them field by field.
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
	// ReadPriority (managedLedgerDataReadPriority): ReadTieredFirst
	// or ReadBookkeeperFirst.
	ReadPriority string
	// AllowedFileSystemRoots (offloadAllowedFileSystemRoots) and
	// AllowedServiceEndpoints (offloadAllowedServiceEndpoints) are where
	// namespace and topic offload policies may point besides the
	// broker's own directory and endpoint (see OffloadAllowed).
	AllowedFileSystemRoots, AllowedServiceEndpoints []string
}

// Allowed is the allow-list of offload locations for policies set
// below the broker: the configured roots and endpoints plus the broker's
// own (none for a nil d).
func (d *OffloadDefaults) Allowed() OffloadAllowed {
	if d == nil {
		return OffloadAllowed{}
	}
	a := OffloadAllowed{
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
	return OffloadDefaults{ThresholdBytes: -1, ThresholdSeconds: -1, DeletionLagMs: 4 * 3600 * 1000, ReadPriority: ReadTieredFirst}
}
