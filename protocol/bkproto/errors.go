package bkproto

import (
	"errors"
	"fmt"

	"github.com/magnetar-mq/magnetar/internal/corrupt"
)

// Codec errors. Any of them from DecodeRequest or DecodeResponse means the
// byte stream can no longer be trusted (except ErrShort, which asks for more
// bytes): close the connection.
var (
	// ErrShort means src holds less than one whole frame. Read more bytes
	// and decode again; it is not a failure.
	ErrShort = errors.New("bkproto: short frame")
	// ErrFrameTooLarge means a frame longer than MaxFrameSize, on decode or
	// encode. Close the connection.
	ErrFrameTooLarge = errors.New("bkproto: frame too large")
	// ErrCorrupt means a frame whose fields do not fit its length, an
	// unknown op code, or an entry whose digest does not match. It matches
	// corrupt.Err, the marker the storage packages share.
	ErrCorrupt = corrupt.New("bkproto: corrupt frame")
)

// Errors carried by response status codes. Status.Err maps a code to one of
// them and StatusOf maps back, so both transports (network and in-process)
// hand the ledger client the same sentinels.
var (
	// ErrNoEntry (ENOENTRY): the bookie holds the ledger but not the entry.
	ErrNoEntry = errors.New("bkproto: no such entry")
	// ErrNoLedger (ENOLEDGER): the bookie does not hold the ledger.
	ErrNoLedger = errors.New("bkproto: no such ledger")
	// ErrBadRequest (EBADREQ): malformed or invalid request. Final.
	ErrBadRequest = errors.New("bkproto: bad request")
	// ErrIO (EIO): the bookie failed the operation (storage, journal,
	// connection). Another bookie may succeed.
	ErrIO = errors.New("bkproto: bookie i/o error")
	// ErrUnauthorized (EUA): wrong master key or refused by the auth hook.
	// Final.
	ErrUnauthorized = errors.New("bkproto: unauthorized")
	// ErrBadVersion (EBADVERSION): protocol version not supported. Final.
	ErrBadVersion = errors.New("bkproto: bad protocol version")
	// ErrFenced (EFENCED): a normal add to a fenced ledger. Final for the
	// writer: another client has recovered (or is recovering) the ledger.
	ErrFenced = errors.New("bkproto: ledger fenced")
	// ErrReadOnly (EREADONLY): the bookie refuses adds. Move to another
	// bookie.
	ErrReadOnly = errors.New("bkproto: bookie is read-only")
	// ErrTooManyRequests (ETOOMANYREQUESTS): the bookie is overloaded. Safe
	// to retry later or elsewhere.
	ErrTooManyRequests = errors.New("bkproto: too many requests")
)

// Status is a response status code.
type Status uint8

// Status codes (docs/protocol.md).
const (
	EOK Status = iota
	ENOENTRY
	ENOLEDGER
	EBADREQ
	EIO
	EUA
	EBADVERSION
	EFENCED
	EREADONLY
	ETOOMANYREQUESTS
	numStatus
)

var statusErrs = [numStatus]error{
	EOK: nil, ENOENTRY: ErrNoEntry, ENOLEDGER: ErrNoLedger, EBADREQ: ErrBadRequest,
	EIO: ErrIO, EUA: ErrUnauthorized, EBADVERSION: ErrBadVersion, EFENCED: ErrFenced,
	EREADONLY: ErrReadOnly, ETOOMANYREQUESTS: ErrTooManyRequests,
}

var statusNames = [numStatus]string{
	"EOK", "ENOENTRY", "ENOLEDGER", "EBADREQ", "EIO", "EUA", "EBADVERSION",
	"EFENCED", "EREADONLY", "ETOOMANYREQUESTS",
}

func (s Status) String() string {
	if s < numStatus {
		return statusNames[s]
	}
	return fmt.Sprintf("Status(%d)", uint8(s))
}

// Err returns the sentinel error for s: nil for EOK, ErrIO for unknown codes.
func (s Status) Err() error {
	if s < numStatus {
		return statusErrs[s]
	}
	return ErrIO
}

// StatusOf returns the status code for err: EOK for nil, the matching code
// for an error wrapping one of the status sentinels, EIO otherwise.
func StatusOf(err error) Status {
	if err == nil {
		return EOK
	}
	for s := ENOENTRY; s < numStatus; s++ {
		if errors.Is(err, statusErrs[s]) {
			return s
		}
	}
	return EIO
}
