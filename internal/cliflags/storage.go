package cliflags

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/magnetar-mq/magnetar/internal/conf"
	"github.com/magnetar-mq/magnetar/internal/conf/convert"
	"github.com/magnetar-mq/magnetar/mledger"
	"github.com/magnetar-mq/magnetar/offload"
	"github.com/magnetar-mq/magnetar/policy"
)

// Storage are the managed-ledger and tiered-storage settings
// standalone and broker share (Pulsar's managedLedger* and offload keys).
type Storage struct {
	maxEntries                    int64
	minRollover, maxRollover      time.Duration
	trimInterval                  time.Duration
	driver, bucket, region, endpt string
	credID, credSecret            string
	maxBlock, readBuf             int64
	fsURI, fsProfile              string
	thresholdBytes, thresholdSecs int64
	deletionLagMs                 int64
	readPriority                  string
	allowedRoots, allowedEndpts   []string
}

// Register adds the flags to fl.
func (s *Storage) Register(fl *pflag.FlagSet) {
	fl.Int64Var(&s.maxEntries, "max-entries-per-ledger", 50000, "roll a topic's ledger after this many entries (0 or negative: after each entry)")
	fl.DurationVar(&s.minRollover, "min-ledger-rollover-time", 10*time.Minute, "no size or count rollover before a ledger is this old (0 or negative: none)")
	fl.DurationVar(&s.maxRollover, "max-ledger-rollover-time", 4*time.Hour, "roll a non-empty ledger this long after its creation (0 or negative: at once, after each entry once past the minimum)")
	fl.DurationVar(&s.trimInterval, "retention-check-interval", 2*time.Minute, "how often topics trim consumed ledgers (retention) and delete bookie copies of offloaded ones")
	fl.StringVar(&s.driver, "offload-driver", "", "tiered storage driver: S3, aws-s3 or filesystem (empty: none)")
	fl.StringVar(&s.bucket, "offload-bucket", "", "S3 bucket of offloaded ledgers")
	fl.StringVar(&s.region, "offload-region", "", "S3 region")
	fl.StringVar(&s.endpt, "offload-service-endpoint", "", "S3 endpoint URL (http:// for plain HTTP; path-style addressing)")
	fl.StringVar(&s.credID, "offload-credential-id", "", "S3 access key (default: AWS_ACCESS_KEY_ID)")
	fl.StringVar(&s.credSecret, "offload-credential-secret", "", "S3 secret key (default: AWS_SECRET_ACCESS_KEY)")
	fl.Int64Var(&s.maxBlock, "offload-max-block-size", offload.DefaultMaxBlockSize, "bytes per data block (multipart part), at least 5 MiB")
	fl.Int64Var(&s.readBuf, "offload-read-buffer-size", offload.DefaultReadBufferSize, "read-ahead bytes per offloaded ledger read handle")
	fl.StringVar(&s.fsURI, "offload-fs-uri", "", "filesystem driver directory (file:///dir or a path)")
	fl.StringVar(&s.fsProfile, "offload-fs-profile", "", "filesystem driver profile file (fs.defaultFS=file:///dir)")
	fl.Int64Var(&s.thresholdBytes, "offload-threshold-bytes", -1, "offload closed ledgers once a topic holds more than this many bytes after them (-1: off)")
	fl.Int64Var(&s.thresholdSecs, "offload-threshold-seconds", -1, "offload closed ledgers this long after they closed (-1: off)")
	fl.Int64Var(&s.deletionLagMs, "offload-deletion-lag-ms", 4*3600*1000, "delete the bookie copy this long after an offload completed (negative: never)")
	fl.StringVar(&s.readPriority, "offload-read-priority", policy.ReadTieredFirst, "read offloaded ledgers from tiered-storage-first or bookkeeper-first")
	fl.StringSliceVar(&s.allowedRoots, "offload-allowed-fs-roots", nil, "directories namespace and topic offload policies (tenant admins) may name in fileSystemURI, besides --offload-fs-uri (empty: only that)")
	fl.StringSliceVar(&s.allowedEndpts, "offload-allowed-endpoints", nil, "S3 endpoints namespace and topic offload policies may name, besides --offload-service-endpoint (empty: only that)")
}

// StorageKeys map Pulsar's configuration keys to the storage flags.
var StorageKeys = []conf.Key{
	{Names: []string{"managedLedgerMaxEntriesPerLedger"}, Flag: "max-entries-per-ledger", Convert: convert.Whole64},
	{Names: []string{"managedLedgerMinLedgerRolloverTimeMinutes"}, Flag: "min-ledger-rollover-time", Convert: convert.AnyMinutes},
	{Names: []string{"managedLedgerMaxLedgerRolloverTimeMinutes"}, Flag: "max-ledger-rollover-time", Convert: convert.AnyMinutes},
	{Names: []string{"retentionCheckIntervalInSeconds"}, Flag: "retention-check-interval", Convert: convert.AtLeastOne(time.Second)},
	{Names: []string{"managedLedgerOffloadDriver"}, Flag: "offload-driver"},
	{Names: []string{"s3ManagedLedgerOffloadCredentialId"}, Flag: "offload-credential-id"},
	{Names: []string{"s3ManagedLedgerOffloadCredentialSecret"}, Flag: "offload-credential-secret"},
	{Names: []string{"s3ManagedLedgerOffloadBucket", "managedLedgerOffloadBucket"}, Flag: "offload-bucket", Convert: firstSet},
	{Names: []string{"s3ManagedLedgerOffloadRegion", "managedLedgerOffloadRegion"}, Flag: "offload-region", Convert: firstSet},
	{Names: []string{"s3ManagedLedgerOffloadServiceEndpoint", "managedLedgerOffloadServiceEndpoint"}, Flag: "offload-service-endpoint", Convert: firstSet},
	{Names: []string{"s3ManagedLedgerOffloadMaxBlockSizeInBytes", "managedLedgerOffloadMaxBlockSizeInBytes"}, Flag: "offload-max-block-size", Convert: firstSet},
	{Names: []string{"s3ManagedLedgerOffloadReadBufferSizeInBytes", "managedLedgerOffloadReadBufferSizeInBytes"}, Flag: "offload-read-buffer-size", Convert: firstSet},
	{Names: []string{"managedLedgerOffloadThresholdInBytes", "managedLedgerOffloadAutoTriggerSizeThresholdBytes"}, Flag: "offload-threshold-bytes", Convert: convert.FirstSetThen(convert.NegativeIsOff)},
	{Names: []string{"fileSystemURI"}, Flag: "offload-fs-uri"},
	{Names: []string{"fileSystemProfilePath"}, Flag: "offload-fs-profile"},
	{Names: []string{"managedLedgerOffloadThresholdInSeconds"}, Flag: "offload-threshold-seconds", Convert: convert.NegativeIsOff},
	{Names: []string{"managedLedgerOffloadDeletionLagMs"}, Flag: "offload-deletion-lag-ms", Convert: convert.NegativeIsZero},
	{Names: []string{"managedLedgerDataReadPriority"}, Flag: "offload-read-priority"},
	{Names: []string{"offloadAllowedFileSystemRoots"}, Flag: "offload-allowed-fs-roots", Doc: "Magnetar's own key: where tenant offload policies may write"},
	{Names: []string{"offloadAllowedServiceEndpoints"}, Flag: "offload-allowed-endpoints", Doc: "Magnetar's own key: which S3 endpoints tenant offload policies may name"},
}

// MLConfig is the managed-ledger configuration the flags ask for, with
// Pulsar's meaning of 0 and negative values (its currentLedgerIsFull):
// a minimum rollover time of 0 is no minimum; a maximum of 0 is already
// reached by every non-empty ledger, and so is a maximum entry count of
// 0 (a ledger rolls after each entry once past the minimum). mledger
// reads 0 as "default", so these become its "none" (negative) and 1.
func (s *Storage) MLConfig() mledger.Config {
	c := mledger.Config{MaxEntriesPerLedger: s.maxEntries, MinLedgerRolloverTime: s.minRollover, MaxLedgerRolloverTime: s.maxRollover,
		TrimInterval: s.trimInterval}
	if c.MinLedgerRolloverTime <= 0 {
		c.MinLedgerRolloverTime = -1
	}
	if c.MaxLedgerRolloverTime <= 0 {
		c.MaxLedgerRolloverTime = -1
	}
	if c.MaxEntriesPerLedger <= 0 {
		c.MaxEntriesPerLedger = 1
	}
	return c
}

// OffloadDefaults are the broker-wide offload settings the flags ask for,
// validated.
func (s *Storage) OffloadDefaults() (*policy.OffloadDefaults, error) {
	props := map[string]string{
		"managedLedgerOffloadDriver":                  s.driver,
		"s3ManagedLedgerOffloadBucket":                s.bucket,
		"s3ManagedLedgerOffloadRegion":                s.region,
		"s3ManagedLedgerOffloadServiceEndpoint":       s.endpt,
		"s3ManagedLedgerOffloadCredentialId":          s.credID,
		"s3ManagedLedgerOffloadCredentialSecret":      s.credSecret,
		"s3ManagedLedgerOffloadMaxBlockSizeInBytes":   fmt.Sprint(s.maxBlock),
		"s3ManagedLedgerOffloadReadBufferSizeInBytes": fmt.Sprint(s.readBuf),
		"fileSystemURI":                               s.fsURI,
		"fileSystemProfilePath":                       s.fsProfile,
	}
	for k, v := range props {
		if v == "" {
			delete(props, k)
		}
	}
	if _, err := offload.FromProperties(props); err != nil {
		return nil, err
	}
	switch s.readPriority {
	case policy.ReadTieredFirst, policy.ReadBookkeeperFirst:
	default:
		return nil, fmt.Errorf("--offload-read-priority %q: want %s or %s", s.readPriority, policy.ReadTieredFirst, policy.ReadBookkeeperFirst)
	}
	if s.thresholdBytes < -1 || s.thresholdSecs < -1 {
		return nil, fmt.Errorf("offload thresholds must be >= -1")
	}
	for _, r := range s.allowedRoots {
		if !filepath.IsAbs(strings.TrimPrefix(r, "file://")) {
			return nil, fmt.Errorf("offloadAllowedFileSystemRoots %q: want an absolute directory", r)
		}
	}
	// An endpoint that cannot be compared would allow nothing: say so.
	for _, e := range s.allowedEndpts {
		probe := &policy.OffloadPolicies{S3ManagedLedgerOffloadServiceEndpoint: e}
		if err := probe.CheckAllowed(policy.OffloadAllowed{ServiceEndpoints: []string{e}}); err != nil {
			return nil, fmt.Errorf("offloadAllowedServiceEndpoints: %v", err)
		}
	}
	return &policy.OffloadDefaults{Properties: props, ThresholdBytes: s.thresholdBytes, ThresholdSeconds: s.thresholdSecs,
		DeletionLagMs: s.deletionLagMs, ReadPriority: strings.ToLower(s.readPriority),
		AllowedFileSystemRoots: s.allowedRoots, AllowedServiceEndpoints: s.allowedEndpts}, nil
}

// firstSet is the first key with a value (the s3* name before the
// driver-neutral one, as Pulsar looks them up).
func firstSet(vals []string, cur string) (string, error) {
	for _, v := range vals {
		if v != "" {
			return v, nil
		}
	}
	return cur, nil
}
