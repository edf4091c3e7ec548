// Package codec is the project's one implementation of Pulsar's payload
// codecs: the values of MessageMetadata.compression (NONE, LZ4, ZLIB,
// ZSTD, SNAPPY), compressing and decompressing. The client's producers
// and consumers (pulsarclient), compaction (broker) and the admin peek
// and get-message-by-id all use it.
//
// Formats (what Pulsar's clients write; docs/compression.md):
//   - LZ4: one bare LZ4 block, no frame header and no size prefix; the
//     decompressed size is MessageMetadata.uncompressed_size.
//   - ZLIB: a zlib stream (RFC 1950: deflate with header and Adler-32).
//   - ZSTD: one Zstandard frame.
//   - SNAPPY: one raw Snappy block (a varint length, then the block; not
//     the Snappy framing format).
//
// Type's values are Pulsar's CompressionType enum numbers, so a
// pb.CompressionType converts directly.
//
// Invariants: Decompress returns exactly the uncompressed size the
// metadata states (a payload that decodes to another length is
// ErrCorrupt, not a truncated or padded result), refuses sizes outside
// [0, MaxSize] before allocating, and never lets the zstd decoder write
// more than the stated size, so a hostile metadata field or frame cannot
// make the process allocate gigabytes. An unknown codec number is
// ErrUnknown. Compress and Decompress are safe for concurrent use.
package codec
