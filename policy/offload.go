package policy

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// OffloadPolicies is Pulsar's OffloadPoliciesImpl: a namespace's (or
// broker's) tiered-storage settings, under Pulsar's JSON names. Unset
// fields fall back to the broker's. Unknown fields (the Go admin client's
// managedLedgerOffloadDriverMetadata, ...) are ignored.
type OffloadPolicies struct {
	OffloadersDirectory                     string `json:"offloadersDirectory,omitempty"`
	ManagedLedgerOffloadDriver              string `json:"managedLedgerOffloadDriver,omitempty"`
	ManagedLedgerOffloadMaxThreads          *int   `json:"managedLedgerOffloadMaxThreads,omitempty"`
	ManagedLedgerOffloadPrefetchRounds      *int   `json:"managedLedgerOffloadPrefetchRounds,omitempty"`
	ManagedLedgerOffloadThresholdInBytes    *int64 `json:"managedLedgerOffloadThresholdInBytes,omitempty"`
	ManagedLedgerOffloadThresholdInSeconds  *int64 `json:"managedLedgerOffloadThresholdInSeconds,omitempty"`
	ManagedLedgerOffloadDeletionLagInMillis *int64 `json:"managedLedgerOffloadDeletionLagInMillis,omitempty"`
	// ManagedLedgerOffloadAutoTriggerSizeThresholdBytes is the Go admin
	// client's name for ManagedLedgerOffloadThresholdInBytes.
	ManagedLedgerOffloadAutoTriggerSizeThresholdBytes *int64 `json:"managedLedgerOffloadAutoTriggerSizeThresholdBytes,omitempty"`
	// ManagedLedgerOffloadedReadPriority is "tiered-storage-first"
	// (default) or "bookkeeper-first".
	ManagedLedgerOffloadedReadPriority string `json:"managedLedgerOffloadedReadPriority,omitempty"`

	S3ManagedLedgerOffloadRegion                string `json:"s3ManagedLedgerOffloadRegion,omitempty"`
	S3ManagedLedgerOffloadBucket                string `json:"s3ManagedLedgerOffloadBucket,omitempty"`
	S3ManagedLedgerOffloadServiceEndpoint       string `json:"s3ManagedLedgerOffloadServiceEndpoint,omitempty"`
	S3ManagedLedgerOffloadMaxBlockSizeInBytes   *int64 `json:"s3ManagedLedgerOffloadMaxBlockSizeInBytes,omitempty"`
	S3ManagedLedgerOffloadReadBufferSizeInBytes *int64 `json:"s3ManagedLedgerOffloadReadBufferSizeInBytes,omitempty"`
	S3ManagedLedgerOffloadCredentialID          string `json:"s3ManagedLedgerOffloadCredentialId,omitempty"`
	S3ManagedLedgerOffloadCredentialSecret      string `json:"s3ManagedLedgerOffloadCredentialSecret,omitempty"`
	S3ManagedLedgerOffloadRole                  string `json:"s3ManagedLedgerOffloadRole,omitempty"`
	S3ManagedLedgerOffloadRoleSessionName       string `json:"s3ManagedLedgerOffloadRoleSessionName,omitempty"`

	ManagedLedgerOffloadBucket                string `json:"managedLedgerOffloadBucket,omitempty"`
	ManagedLedgerOffloadRegion                string `json:"managedLedgerOffloadRegion,omitempty"`
	ManagedLedgerOffloadServiceEndpoint       string `json:"managedLedgerOffloadServiceEndpoint,omitempty"`
	ManagedLedgerOffloadMaxBlockSizeInBytes   *int64 `json:"managedLedgerOffloadMaxBlockSizeInBytes,omitempty"`
	ManagedLedgerOffloadReadBufferSizeInBytes *int64 `json:"managedLedgerOffloadReadBufferSizeInBytes,omitempty"`

	FileSystemProfilePath string `json:"fileSystemProfilePath,omitempty"`
	FileSystemURI         string `json:"fileSystemURI,omitempty"`
}

// Read priorities.
const (
	ReadTieredFirst     = "tiered-storage-first"
	ReadBookkeeperFirst = "bookkeeper-first"
)

// Validate refuses values Pulsar refuses: thresholds below -1, a read
// priority other than the two names, block sizes under 5 MiB, an
// unknown driver.
func (o *OffloadPolicies) Validate() error {
	for name, v := range map[string]*int64{
		"managedLedgerOffloadThresholdInBytes":              o.ManagedLedgerOffloadThresholdInBytes,
		"managedLedgerOffloadThresholdInSeconds":            o.ManagedLedgerOffloadThresholdInSeconds,
		"managedLedgerOffloadAutoTriggerSizeThresholdBytes": o.ManagedLedgerOffloadAutoTriggerSizeThresholdBytes,
	} {
		if v != nil && *v < -1 {
			return fmt.Errorf("%s must be >= -1", name)
		}
	}
	switch o.ManagedLedgerOffloadedReadPriority {
	case "", ReadTieredFirst, ReadBookkeeperFirst:
	default:
		return fmt.Errorf("managedLedgerOffloadedReadPriority %q: want %s or %s",
			o.ManagedLedgerOffloadedReadPriority, ReadTieredFirst, ReadBookkeeperFirst)
	}
	for _, v := range []*int64{o.S3ManagedLedgerOffloadMaxBlockSizeInBytes, o.ManagedLedgerOffloadMaxBlockSizeInBytes} {
		if v != nil && (*v < 5<<20 || *v > 1<<31-1) {
			return errors.New("ManagedLedgerOffloadMaxBlockSizeInBytes cannot be less than 5MB")
		}
	}
	for _, v := range []*int64{o.S3ManagedLedgerOffloadReadBufferSizeInBytes, o.ManagedLedgerOffloadReadBufferSizeInBytes} {
		if v != nil && (*v <= 0 || *v > 1<<30) {
			return errors.New("ReadBufferSizeInBytes must be between 1 and 1 GiB")
		}
	}
	switch d := strings.ToLower(o.ManagedLedgerOffloadDriver); d {
	case "", "s3", "aws-s3", "filesystem":
	default:
		return fmt.Errorf("offload driver %q is not supported (S3, aws-s3, filesystem)", o.ManagedLedgerOffloadDriver)
	}
	return nil
}

// ThresholdBytes is the size threshold (either JSON name), nil if unset.
func (o *OffloadPolicies) ThresholdBytes() *int64 {
	if o.ManagedLedgerOffloadThresholdInBytes != nil {
		return o.ManagedLedgerOffloadThresholdInBytes
	}
	return o.ManagedLedgerOffloadAutoTriggerSizeThresholdBytes
}

// Properties returns the connection settings that are set, under the
// setting names package offload reads.
func (o *OffloadPolicies) Properties() map[string]string {
	m := map[string]string{}
	set := func(k, v string) {
		if v != "" {
			m[k] = v
		}
	}
	num := func(k string, v *int64) {
		if v != nil {
			m[k] = strconv.FormatInt(*v, 10)
		}
	}
	set("managedLedgerOffloadDriver", o.ManagedLedgerOffloadDriver)
	set("s3ManagedLedgerOffloadRegion", o.S3ManagedLedgerOffloadRegion)
	set("s3ManagedLedgerOffloadBucket", o.S3ManagedLedgerOffloadBucket)
	set("s3ManagedLedgerOffloadServiceEndpoint", o.S3ManagedLedgerOffloadServiceEndpoint)
	num("s3ManagedLedgerOffloadMaxBlockSizeInBytes", o.S3ManagedLedgerOffloadMaxBlockSizeInBytes)
	num("s3ManagedLedgerOffloadReadBufferSizeInBytes", o.S3ManagedLedgerOffloadReadBufferSizeInBytes)
	set("s3ManagedLedgerOffloadCredentialId", o.S3ManagedLedgerOffloadCredentialID)
	set("s3ManagedLedgerOffloadCredentialSecret", o.S3ManagedLedgerOffloadCredentialSecret)
	set("managedLedgerOffloadBucket", o.ManagedLedgerOffloadBucket)
	set("managedLedgerOffloadRegion", o.ManagedLedgerOffloadRegion)
	set("managedLedgerOffloadServiceEndpoint", o.ManagedLedgerOffloadServiceEndpoint)
	num("managedLedgerOffloadMaxBlockSizeInBytes", o.ManagedLedgerOffloadMaxBlockSizeInBytes)
	num("managedLedgerOffloadReadBufferSizeInBytes", o.ManagedLedgerOffloadReadBufferSizeInBytes)
	set("fileSystemProfilePath", o.FileSystemProfilePath)
	set("fileSystemURI", o.FileSystemURI)
	return m
}
