package broker

import (
	"sync/atomic"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
)

// The core parses entries only through these three functions (a lint
// test in entryparse_test.go holds every other file of the package to
// it), so that a test can count the parses of one SEND: the SEND path
// parses the entry once (parseSend) and hands the parsed view, Entry,
// down every stage (interceptors, encryption check, deduplication,
// storage callback).

// testHookParse, when set by a test, is called on every entry and every
// metadata parse.
var testHookParse atomic.Pointer[func(metadata bool)]

func noteParse(metadata bool) {
	if f := testHookParse.Load(); f != nil {
		(*f)(metadata)
	}
}

// verifyEntry is pulsarproto.VerifyEntry (framing and checksum).
func verifyEntry(b []byte) (pulsarproto.Entry, error) {
	noteParse(false)
	return pulsarproto.VerifyEntry(b)
}

// parseEntry is pulsarproto.ParseEntry (framing only).
func parseEntry(b []byte) (pulsarproto.Entry, error) {
	noteParse(false)
	return pulsarproto.ParseEntry(b)
}

// parseMetadata is pulsarproto.ParseMetadata.
func parseMetadata(b []byte, md *pulsarproto.Metadata) error {
	noteParse(true)
	return pulsarproto.ParseMetadata(b, md)
}
