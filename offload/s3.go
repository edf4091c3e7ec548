package offload

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// s3Store keeps objects in one S3 bucket through minio-go's low-level
// Core API, so that each data block is exactly one multipart part.
type s3Store struct {
	core   minio.Core
	bucket string
}

func newS3Store(c Config) (*s3Store, error) {
	endpoint, secure := "s3.amazonaws.com", true
	if c.Region != "" {
		endpoint = "s3." + c.Region + ".amazonaws.com"
	}
	lookup := minio.BucketLookupAuto
	if c.ServiceEndpoint != "" {
		ep := c.ServiceEndpoint
		if !strings.Contains(ep, "://") {
			ep = "https://" + ep
		}
		u, err := url.Parse(ep)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("%w: s3ManagedLedgerOffloadServiceEndpoint %q", ErrBadConfig, c.ServiceEndpoint)
		}
		endpoint, secure = u.Host, u.Scheme == "https"
		lookup = minio.BucketLookupPath
	}
	var creds *credentials.Credentials
	if c.CredentialID != "" && c.CredentialSecret != "" {
		creds = credentials.NewStaticV4(c.CredentialID, c.CredentialSecret, "")
	} else {
		creds = credentials.NewChainCredentials([]credentials.Provider{&credentials.EnvAWS{}})
	}
	cl, err := minio.New(endpoint, &minio.Options{
		Creds:        creds,
		Secure:       secure,
		Region:       c.Region,
		BucketLookup: lookup,
		MaxRetries:   3,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: s3 client: %v", ErrBadConfig, err)
	}
	return &s3Store{core: minio.Core{Client: cl}, bucket: c.Bucket}, nil
}

func (s *s3Store) withBucket(b string) *s3Store {
	if b == "" || b == s.bucket {
		return s
	}
	return &s3Store{core: s.core, bucket: b}
}

// s3Err classifies a store error: a missing object is ErrNotFound,
// anything else ErrStoreUnavailable.
func s3Err(op, key string, err error) error {
	if err == nil {
		return nil
	}
	var resp minio.ErrorResponse
	if errors.As(err, &resp) && (resp.Code == "NoSuchKey" || resp.StatusCode == http.StatusNotFound && resp.Code != "NoSuchBucket") {
		return fmt.Errorf("%s %s: %w", op, key, ErrNotFound)
	}
	return fmt.Errorf("%s %s: %w: %v", op, key, ErrStoreUnavailable, err)
}

func (s *s3Store) putParts(ctx context.Context, key string, meta map[string]string, next func() ([]byte, error)) (n int64, err error) {
	id, err := s.core.NewMultipartUpload(ctx, s.bucket, key, minio.PutObjectOptions{UserMetadata: meta})
	if err != nil {
		return 0, s3Err("initiate upload", key, err)
	}
	defer func() {
		if err != nil {
			// Abort with a fresh context: the caller's may be what failed.
			actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeOpTimeout)
			_ = s.core.AbortMultipartUpload(actx, s.bucket, key, id)
			cancel()
		}
	}()
	var parts []minio.CompletePart
	for {
		b, err := next()
		if err != nil {
			return 0, err
		}
		if b == nil {
			break
		}
		p, err := s.core.PutObjectPart(ctx, s.bucket, key, id, len(parts)+1, bytes.NewReader(b), int64(len(b)), minio.PutObjectPartOptions{DisableContentSha256: true})
		if err != nil {
			return 0, s3Err("upload part", key, err)
		}
		parts = append(parts, minio.CompletePart{PartNumber: p.PartNumber, ETag: p.ETag})
		n += int64(len(b))
	}
	if _, err := s.core.CompleteMultipartUpload(ctx, s.bucket, key, id, parts, minio.PutObjectOptions{}); err != nil {
		return 0, s3Err("complete upload", key, err)
	}
	return n, nil
}

func (s *s3Store) put(ctx context.Context, key string, data []byte, meta map[string]string) error {
	_, err := s.core.PutObject(ctx, s.bucket, key, bytes.NewReader(data), int64(len(data)), "", "",
		minio.PutObjectOptions{UserMetadata: meta})
	return s3Err("put", key, err)
}

func (s *s3Store) getRange(ctx context.Context, key string, off, n int64) ([]byte, map[string]string, error) {
	var opts minio.GetObjectOptions
	if n >= 0 {
		if err := opts.SetRange(off, off+n-1); err != nil {
			return nil, nil, err
		}
	} else if off > 0 {
		if err := opts.SetRange(off, 0); err != nil {
			return nil, nil, err
		}
	}
	rc, info, _, err := s.core.GetObject(ctx, s.bucket, key, opts)
	if err != nil {
		return nil, nil, s3Err("get", key, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return nil, nil, s3Err("get", key, err)
	}
	meta := map[string]string{}
	for k, v := range info.UserMetadata {
		meta[strings.ToLower(k)] = v
	}
	for k, v := range info.Metadata {
		if lk := strings.ToLower(k); strings.HasPrefix(lk, "x-amz-meta-") && len(v) > 0 {
			meta[strings.TrimPrefix(lk, "x-amz-meta-")] = v[0]
		}
	}
	return b, meta, nil
}

func (s *s3Store) size(ctx context.Context, key string) (int64, error) {
	info, err := s.core.StatObject(ctx, s.bucket, key, minio.StatObjectOptions{})
	if err != nil {
		return 0, s3Err("stat", key, err)
	}
	return info.Size, nil
}

// pendingUploads lists the unfinished multipart uploads of keys starting
// with prefix (key and upload id).
func (s *s3Store) pendingUploads(ctx context.Context, prefix string) ([][2]string, error) {
	res, err := s.core.ListMultipartUploads(ctx, s.bucket, prefix, "", "", "", 1000)
	if err != nil {
		return nil, s3Err("list uploads", prefix, err)
	}
	var out [][2]string
	for _, u := range res.Uploads {
		out = append(out, [2]string{u.Key, u.UploadID})
	}
	return out, nil
}

func (s *s3Store) remove(ctx context.Context, key string) error {
	// An upload interrupted by a crash holds parts (and storage) without
	// being an object: abort it too (best effort; a store without the
	// listing call just keeps them until its own expiry).
	if ups, err := s.pendingUploads(ctx, key); err == nil {
		for _, u := range ups {
			if u[0] == key {
				_ = s.core.AbortMultipartUpload(ctx, s.bucket, key, u[1])
			}
		}
	}
	err := s.core.RemoveObject(ctx, s.bucket, key, minio.RemoveObjectOptions{})
	if err = s3Err("delete", key, err); errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

func (s *s3Store) list(ctx context.Context, prefix string) ([]string, error) {
	var out []string
	for o := range s.core.Client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			return nil, s3Err("list", prefix, o.Err)
		}
		out = append(out, o.Key)
	}
	return out, nil
}
