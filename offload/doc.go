// Package offload moves closed ledgers to an object store (tiered
// storage) and reads them back: an S3 driver (any S3-compatible store,
// through minio-go's Core API) and a filesystem driver (a directory).
// The managed ledger (package mledger) decides what and when to offload
// and records each attempt in its metadata; this package only writes,
// verifies, reads and deletes the objects of one ledger.
//
// # Objects
//
// An offload of ledger L under the attempt id U (a random UUID, fresh for
// every attempt) writes two objects:
//
//	U-ledger-L         data object: the ledger's entries in blocks
//	U-ledger-L-index   index object: where each block starts
//
// Both carry user metadata (S3 x-amz-meta-*; for the directory store the
// sidecar file <key>.meta, JSON): s3managedledgeroffloaderformatversion =
// "1", role = data|index, managedledgername = the managed ledger. Every
// read checks the version and refuses any other (ErrCorrupt).
//
// # Data object (all integers big-endian)
//
// A sequence of blocks; on S3 each block is exactly one multipart part.
//
//	block:  int32 magic 0xFBDBABCB | int64 headerLength = 128 |
//	        int64 blockLength | int64 firstEntryId | zeros up to 128
//	        then records: int32 entryLength | int64 entryId | entry bytes
//	        then padding FE DC DE AD repeated up to blockLength
//
// A record never spans blocks. Block length = min(MaxBlockSize, what is
// left of the ledger: remaining entries × 12 + remaining bytes + 128),
// but at least what the next entry needs (so an entry larger than
// MaxBlockSize gets a block of its own; S3 allows a large part). Only
// the last block is smaller than MaxBlockSize, which S3 requires (every
// part but the last at least 5 MiB: MaxBlockSize >= 5 MiB). A reader
// recognises padding because its first four bytes read as a negative
// length.
//
// # Index object
//
//	int32 magic 0xDE47DE47 | int32 indexLength | int64 dataObjectLength |
//	int64 dataHeaderLength = 128 | int32 blockCount | int32 segmentLength |
//	segment | blockCount × (int64 firstEntryId | int32 partNumber |
//	int64 blockOffset)
//	segment (33 bytes): byte 1 | int64 lastEntryId | int64 length |
//	                    int64 entries | int64 ctimeMs
//
// indexLength = 32 + segmentLength + 20 × blockCount. blockOffset is the
// sum of the earlier blocks' lengths (the first is 0). An entry is found
// by a floor search over firstEntryId. The block and index layout follow
// Pulsar's blob-store offloader; the segment is Magnetar's own (Pulsar
// stores BookKeeper's ledger metadata protobuf there), so Magnetar does
// not read objects written by Java Pulsar, nor the reverse.
//
// # Write protocol (Offloader.Offload)
//
// Data object first (multipart: initiate, one part per block, complete;
// any error aborts the upload), then the index object (single PUT), then
// verification: the data object's stored length must equal the index's
// dataObjectLength, the index read back must equal the one written, and
// the last entry read back through a ReadHandle must equal the source's.
// On any failure both keys are removed (best effort) and the error
// returned; the caller's metadata still names U, so a crash between any
// two steps is cleaned up by the caller's next attempt (mledger deletes
// both keys of the old U before it starts a new one). The directory store
// writes each object to a temporary file, syncs and renames it, so an
// object is whole or absent; temporaries of a crashed write are removed
// by the next write or delete of the key.
//
// # Reads (ReadHandle)
//
// Open GETs the index (up to three tries). The handle keeps one read-ahead
// buffer of ReadBufferSize bytes: a read whose bytes lie in the buffer is
// served from it, otherwise one ranged GET refills it from the wanted
// offset. A read continues from where the previous one stopped when it
// asks for the next entries, else it seeks through the index. A store
// error fails the read with ErrStoreUnavailable and drops the buffer;
// the next read tries again.
//
// # Configuration (Pulsar's names; FromProperties)
//
// managedLedgerOffloadDriver (S3, aws-s3, filesystem; case-insensitive),
// s3ManagedLedgerOffloadBucket, ...Region, ...ServiceEndpoint,
// ...MaxBlockSizeInBytes (64 MiB, >= 5 MiB), ...ReadBufferSizeInBytes
// (1 MiB), ...CredentialId/...CredentialSecret (else AWS_ACCESS_KEY_ID
// and AWS_SECRET_ACCESS_KEY), each also under its driver-neutral
// managedLedgerOffload* name; fileSystemURI (file:///dir or a path) or
// fileSystemProfilePath (a key=value file whose fs.defaultFS names the
// directory). An endpoint means path-style bucket addressing; its scheme
// decides TLS.
//
// # Metrics
//
// brk_ledgeroffloader_offload_bytes_total, _offloaded_ledgers_total,
// _offload_error_total, _deleted_offloads_total, _read_offload_error_total,
// _read_offload_bytes_total and the histograms
// _read_offload_latency_seconds (each object-store GET) and
// _offload_duration_seconds.
package offload
