// Package bkproto is the bookie wire protocol: request and response frames
// exchanged between the ledger client and bookies over TCP, the status
// codes, and the entry framing the client stores on bookies. It works on
// []byte only; no I/O.
//
// # Frames
//
// All integers are big endian. Every frame starts with a 4-byte length
// counting the bytes after it (at most MaxFrameSize, 5 MiB), then the op
// code, a flags byte (requests) or status byte (responses), and a request
// id chosen by the client. Requests are pipelined: a client sends many
// before the first answer, and the server may answer out of order; the
// request id matches them up.
//
//	request:  len u32 | op u8 | flags u8  | reqID u64 | body
//	response: len u32 | op u8 | status u8 | reqID u64 | body
//
// Request bodies:
//
//	ADD        ledger i64 | entry i64 | keyLen u16 | key | entry bytes
//	READ       ledger i64 | entry i64 [| keyLen u16 | key   if FlagFence]
//	READ_LAC   ledger i64
//	WRITE_LAC  ledger i64 | lac i64 | keyLen u16 | key | body
//	LONG_POLL  ledger i64 | previous lac i64 | timeout ms u32
//	AUTH       opaque bytes
//
// Response bodies (AUTH: opaque bytes only):
//
//	ledger i64 | entry-or-lac i64 | payload
//
// READ answers entry id and the stored entry; READ_LAC the explicit LAC
// (-1 if none) and the last stored entry (empty if none); LONG_POLL the
// bookie's LAC and, if it passed the previous LAC, the next entry.
// Entry -1 in READ means "the last entry stored". A READ with FlagFence is
// the fence request of ledger recovery: the bookie durably fences the
// ledger before answering. FlagRecovery marks recovery adds (accepted on
// fenced ledgers). Fence and recovery requests are the high-priority class.
//
// Flags: FlagFence 0x1, FlagRecovery 0x2, FlagHighPriority 0x4 (v2 values).
// Status codes: EOK, ENOENTRY, ENOLEDGER, EBADREQ, EIO, EUA, EBADVERSION,
// EFENCED, EREADONLY, ETOOMANYREQUESTS (0..9), each mapped to a sentinel
// error (Status.Err, StatusOf).
//
// # Entries
//
// What a bookie stores per entry is written by the client:
//
//	ledgerId i64 | entryId i64 | LAC i64 | totalLength i64 | crc32c u32 | payload
//
// The CRC32C (Castagnoli) covers the 32 header bytes and the payload.
// Bookies never look inside; readers verify it (DecodeEntry).
//
// # Allocation
//
// AppendXxx append to the caller's buffer; DecodeRequest and
// DecodeResponse return (rest, value, err) with slices aliasing the input,
// so the add path allocates nothing.
package bkproto
