package pulsarproto

import "errors"

// Frame-level errors. Any of them leaves the byte stream in an unknown state
// (the frame boundary can no longer be trusted), so a connection that returns
// one from FrameReader.Next must be closed; retrying the read is never safe.
// Entry-level errors (ErrBadMagic, ErrChecksum, ErrMalformed from ParseEntry,
// VerifyEntry or ParseMetadata) concern one payload only: the frame boundary
// is intact and the broker may answer SEND_ERROR and carry on.
var (
	// ErrFrameTooLarge means a frame's totalSize exceeds the configured
	// maximum. The frame has not been read; close the connection.
	ErrFrameTooLarge = errors.New("pulsarproto: frame too large")

	// ErrTruncated means the input ended inside a frame or inside one of the
	// length-prefixed sections of a payload. When returned by a reader it
	// wraps io.ErrUnexpectedEOF.
	ErrTruncated = errors.New("pulsarproto: truncated frame")

	// ErrBadCommandSize means the commandSize field is inconsistent with
	// totalSize (bigger than the frame, or a frame too short to hold it).
	ErrBadCommandSize = errors.New("pulsarproto: bad command size")

	// ErrMalformed means protobuf bytes that do not decode, or that lack a
	// field the protocol requires, or an encoder asked to write such a
	// message.
	ErrMalformed = errors.New("pulsarproto: malformed message")

	// ErrBadMagic means a payload section does not start with the 0x0e01
	// checksum magic (optionally preceded by a 0x0e02 broker entry metadata
	// block).
	ErrBadMagic = errors.New("pulsarproto: bad payload magic")

	// ErrChecksum means the CRC32C stored after the 0x0e01 magic does not
	// match the bytes it covers. Answer SEND_ERROR with ChecksumError.
	ErrChecksum = errors.New("pulsarproto: checksum mismatch")

	// ErrBadTopicName means a topic or namespace name that cannot be
	// canonicalised. Answer with ServerError InvalidTopicName.
	ErrBadTopicName = errors.New("pulsarproto: invalid topic name")
)
