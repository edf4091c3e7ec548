package offload

import (
	"bufio"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
)

// Driver names (managedLedgerOffloadDriver; matched ignoring case).
const (
	DriverS3         = "S3"         // any S3-compatible store; needs an endpoint
	DriverAWSS3      = "aws-s3"     // AWS S3; region and/or endpoint
	DriverFilesystem = "filesystem" // a directory (fileSystemURI)
)

// Defaults and limits of the block and buffer sizes.
const (
	DefaultMaxBlockSize   = 64 << 20
	MinMaxBlockSize       = 5 << 20 // S3's smallest non-final multipart part
	DefaultReadBufferSize = 1 << 20
)

// Config is one offloader's connection settings. Config values come from
// Pulsar's setting names through FromProperties.
type Config struct {
	// Driver is DriverS3, DriverAWSS3 or DriverFilesystem ("" = none).
	Driver string
	// Bucket, Region and ServiceEndpoint locate the S3 bucket
	// (s3ManagedLedgerOffloadBucket, ...Region, ...ServiceEndpoint). An
	// endpoint URL's scheme decides TLS (http:// is plain); path-style
	// addressing is used whenever an endpoint is given.
	Bucket, Region, ServiceEndpoint string
	// CredentialID and CredentialSecret are static keys
	// (s3ManagedLedgerOffloadCredentialId/...Secret); when unset the
	// AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY environment and then
	// anonymous access are used.
	CredentialID, CredentialSecret string
	// MaxBlockSize bounds one data block (= one multipart part);
	// default 64 MiB, at least 5 MiB.
	MaxBlockSize int64
	// ReadBufferSize is the read-ahead of a read handle (one ranged GET
	// fills it); default 1 MiB.
	ReadBufferSize int64
	// Directory is the filesystem driver's root (from fileSystemURI
	// file:///path, a plain path, or fs.defaultFS in the
	// fileSystemProfilePath file).
	Directory string
}

// PropertyKeys are the setting names FromProperties reads, for config
// file schemas and documentation.
var PropertyKeys = []string{
	"managedLedgerOffloadDriver",
	"s3ManagedLedgerOffloadBucket", "managedLedgerOffloadBucket",
	"s3ManagedLedgerOffloadRegion", "managedLedgerOffloadRegion",
	"s3ManagedLedgerOffloadServiceEndpoint", "managedLedgerOffloadServiceEndpoint",
	"s3ManagedLedgerOffloadMaxBlockSizeInBytes", "managedLedgerOffloadMaxBlockSizeInBytes",
	"s3ManagedLedgerOffloadReadBufferSizeInBytes", "managedLedgerOffloadReadBufferSizeInBytes",
	"s3ManagedLedgerOffloadCredentialId", "s3ManagedLedgerOffloadCredentialSecret",
	"fileSystemURI", "fileSystemProfilePath",
}

// FromProperties builds a Config from Pulsar's setting names: each
// setting is taken from its s3ManagedLedgerOffload* name, else from the
// driver-neutral managedLedgerOffload* name. Empty values count as unset.
func FromProperties(p map[string]string) (Config, error) {
	get := func(names ...string) string {
		for _, n := range names {
			if v := strings.TrimSpace(p[n]); v != "" {
				return v
			}
		}
		return ""
	}
	size := func(def int64, names ...string) (int64, error) {
		v := get(names...)
		if v == "" {
			return def, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("%w: %s=%q is not a positive integer", ErrBadConfig, names[0], v)
		}
		return n, nil
	}
	c := Config{
		Driver:           get("managedLedgerOffloadDriver"),
		Bucket:           get("s3ManagedLedgerOffloadBucket", "managedLedgerOffloadBucket"),
		Region:           get("s3ManagedLedgerOffloadRegion", "managedLedgerOffloadRegion"),
		ServiceEndpoint:  get("s3ManagedLedgerOffloadServiceEndpoint", "managedLedgerOffloadServiceEndpoint"),
		CredentialID:     get("s3ManagedLedgerOffloadCredentialId"),
		CredentialSecret: get("s3ManagedLedgerOffloadCredentialSecret"),
	}
	var err error
	if c.MaxBlockSize, err = size(DefaultMaxBlockSize, "s3ManagedLedgerOffloadMaxBlockSizeInBytes", "managedLedgerOffloadMaxBlockSizeInBytes"); err != nil {
		return c, err
	}
	if c.ReadBufferSize, err = size(DefaultReadBufferSize, "s3ManagedLedgerOffloadReadBufferSizeInBytes", "managedLedgerOffloadReadBufferSizeInBytes"); err != nil {
		return c, err
	}
	if uri := get("fileSystemURI"); uri != "" {
		c.Directory = uri
	} else if prof := get("fileSystemProfilePath"); prof != "" {
		if c.Directory, err = profileURI(prof); err != nil {
			return c, err
		}
	}
	if c.Directory != "" {
		if c.Directory, err = dirFromURI(c.Directory); err != nil {
			return c, err
		}
	}
	return c, c.Validate()
}

// profileURI reads fs.defaultFS (or fileSystemURI) from a key=value
// profile file (Magnetar's stand-in for Pulsar's Hadoop profile).
func profileURI(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("%w: fileSystemProfilePath: %v", ErrBadConfig, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		if k = strings.TrimSpace(k); k == "fs.defaultFS" || k == "fileSystemURI" {
			return strings.TrimSpace(v), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("%w: fileSystemProfilePath: %v", ErrBadConfig, err)
	}
	return "", fmt.Errorf("%w: %s sets neither fs.defaultFS nor fileSystemURI", ErrBadConfig, path)
}

func dirFromURI(s string) (string, error) {
	if !strings.Contains(s, "://") {
		return s, nil
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "file" || u.Path == "" {
		return "", fmt.Errorf("%w: fileSystemURI %q: want file:///path or a path (no HDFS in Magnetar)", ErrBadConfig, s)
	}
	return u.Path, nil
}

// Enabled reports whether a driver is configured.
func (c Config) Enabled() bool { return c.Driver != "" }

// Validate reports settings that cannot work.
func (c Config) Validate() error {
	if c.Driver == "" {
		return nil
	}
	switch {
	case strings.EqualFold(c.Driver, DriverS3):
		if c.ServiceEndpoint == "" {
			return fmt.Errorf("%w: driver S3 needs s3ManagedLedgerOffloadServiceEndpoint", ErrBadConfig)
		}
	case strings.EqualFold(c.Driver, DriverAWSS3):
		if c.Region == "" && c.ServiceEndpoint == "" {
			return fmt.Errorf("%w: either Region or ServiceEndpoint must be specified", ErrBadConfig)
		}
	case strings.EqualFold(c.Driver, DriverFilesystem):
		if c.Directory == "" {
			return fmt.Errorf("%w: driver filesystem needs fileSystemURI", ErrBadConfig)
		}
		return c.sizes()
	default:
		return fmt.Errorf("%w: offload driver %q is not supported (want S3, aws-s3 or filesystem)", ErrBadConfig, c.Driver)
	}
	if c.Bucket == "" {
		return fmt.Errorf("%w: s3ManagedLedgerOffloadBucket is required", ErrBadConfig)
	}
	return c.sizes()
}

func (c Config) sizes() error {
	if c.MaxBlockSize != 0 && c.MaxBlockSize < MinMaxBlockSize {
		return fmt.Errorf("%w: ManagedLedgerOffloadMaxBlockSizeInBytes cannot be less than 5MB", ErrBadConfig)
	}
	if c.MaxBlockSize > 1<<31-1 {
		return fmt.Errorf("%w: ManagedLedgerOffloadMaxBlockSizeInBytes above 2 GiB", ErrBadConfig)
	}
	if c.ReadBufferSize < 0 || c.ReadBufferSize > 1<<30 {
		return fmt.Errorf("%w: ReadBufferSizeInBytes out of range", ErrBadConfig)
	}
	return nil
}

func (c *Config) ensureDefaults() {
	if c.MaxBlockSize == 0 {
		c.MaxBlockSize = DefaultMaxBlockSize
	}
	if c.ReadBufferSize == 0 {
		c.ReadBufferSize = DefaultReadBufferSize
	}
}

// DriverMetadata is what a completed offload records next to its uid
// (Pulsar's keys): reads and deletes take the bucket from it.
func (c Config) DriverMetadata() map[string]string {
	m := map[string]string{
		"managedLedgerOffloadDriver": c.Driver,
		"bucket":                     c.Bucket,
		"region":                     c.Region,
		"serviceEndpoint":            c.ServiceEndpoint,
	}
	if strings.EqualFold(c.Driver, DriverFilesystem) {
		m["fileSystemURI"] = "file://" + c.Directory
	}
	return m
}
