// Package codec decompresses Pulsar message payloads: the codecs a
// client may name in MessageMetadata.compression (NONE, LZ4, ZLIB, ZSTD,
// SNAPPY), so that every part of Magnetar that has to look inside a
// payload (the admin peek and get-message-by-id, compaction, tools)
// shares one implementation.
//
// Formats (what Pulsar's clients write; docs/compression.md):
//   - LZ4: one raw LZ4 block, no frame header; the decompressed size is
//     MessageMetadata.uncompressed_size.
//   - ZLIB: a zlib stream (RFC 1950).
//   - ZSTD: one Zstandard frame.
//   - SNAPPY: one raw Snappy block (its length is a varint prefix).
//
// Invariants: Decompress never returns more than the uncompressed size
// the metadata states (a payload that decodes to another length is an
// error, not a truncated or padded result), and refuses sizes above
// MaxSize before allocating, so a hostile metadata field cannot make the
// broker allocate gigabytes.
package codec
