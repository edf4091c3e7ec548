// Package pulsarproto encodes and decodes the Pulsar binary protocol: frames,
// commands (generated types in package pb), the checksummed payload section
// the broker stores as an entry, MessageMetadata, batch records and topic
// names. It does no I/O beyond reading frames from an io.Reader.
//
// # Frames
//
// All integers are big-endian.
//
//	simple:  [totalSize u32][commandSize u32][BaseCommand]
//	payload: [totalSize u32][commandSize u32][BaseCommand][entry ...]
//
// totalSize counts every byte after itself; a frame has a payload iff
// totalSize > 4+commandSize. Only SEND (client to broker) and MESSAGE (broker
// to client) carry one.
//
// # Entries
//
// The payload of a frame is called an entry here: the broker stores these
// bytes as received and sends them to consumers unchanged.
//
//	[0x0e02 u16][size u32][BrokerEntryMetadata]                 optional
//	[0x0e01 u16][crc32c u32][metadataSize u32][MessageMetadata][payload]
//
// The CRC32C (Castagnoli) covers metadataSize, metadata and payload: every
// byte after the checksum field. The 0x0e02 block is only ever sent to
// clients whose CONNECT announced supports_broker_entry_metadata; Entry.Body
// is the entry without it. A batch payload (MessageMetadata has
// num_messages_in_batch, even = 1) is, after decompression, a run of
// [smmSize u32][SingleMessageMetadata][payload of payload_size bytes].
//
// # Usage
//
// Reading (broker side):
//
//	fr := pulsarproto.NewFrameReader(bufio.NewReader(conn), maxMessageSize+pulsarproto.FramePadding)
//	for {
//		f, err := fr.Next() // f valid until the next call
//		if err != nil { ... close ... }
//		switch f.Type {
//		case pb.BaseCommand_SEND:
//			s := f.Cmd.GetSend()
//			e, err := pulsarproto.VerifyEntry(f.Payload) // ErrChecksum -> SEND_ERROR ChecksumError
//			var md pulsarproto.Metadata
//			err = pulsarproto.ParseMetadata(e.Metadata, &md)
//			entry := f.Payload
//			if buf, off, ok := f.PayloadBuffer(); ok {
//				// A large frame read into its own buffer: keep it as is
//				// (buf[:off], at least FrameHeadroom bytes, is free room).
//				entry = buf[off:]
//			} else {
//				entry = append([]byte(nil), f.Payload...) // reused buffer
//			}
//			store(entry, md.NumMessages(), s.GetSequenceId())
//		}
//	}
//
// Frames up to OwnedFrameThreshold (64 KiB) are read into the FrameReader's
// reused buffer and are valid until the next call. Larger frames are read
// into a fresh buffer of their own, FrameHeadroom bytes in, straight from
// the stream (a bufio.Reader hands over its buffered bytes, then reads the
// rest directly while at least a buffer's worth is missing): Frame.Owned is
// set, and Raw and Payload may be kept without copying. The limit checks
// happen on the 4-byte totalSize, before anything of that size is
// allocated.
//
// Writing:
//
//	buf, err = pulsarproto.AppendCommand(buf[:0], &pb.BaseCommand{...}) // any command
//	buf = pulsarproto.AppendMessage(buf[:0], &pulsarproto.MessageHeader{...}, entry)
//	buf = pulsarproto.AppendSendReceipt(buf[:0], &pulsarproto.SendReceipt{...})
//
// # Hot paths
//
// Decoding a SEND and encoding MESSAGE and SEND_RECEIPT do not allocate in
// steady state (see BENCH_NOTES.md); reading a frame above
// OwnedFrameThreshold allocates exactly its buffer. SEND is decoded by hand with protowire
// into a reused pb.CommandSend whose pointer fields point into the Decoder;
// an unusual SEND (unknown fields, message_id, duplicated fields) falls back
// to the generated code, which yields the same values. MESSAGE and
// SEND_RECEIPT encoders write the same bytes the generated code would.
//
// # Tests
//
// Besides table, golden and fuzz tests here, the test-only package
// ./interop runs pulsar-client-go against a fake broker built on this
// package and regenerates testdata/*.golden (-update-golden).
//
// # Topic names
//
// ParseTopicName canonicalises names as Pulsar does ("t" ->
// "persistent://public/default/t", "a/b/t" -> "persistent://a/b/t") and
// recognises the "-partition-N" suffix. The broker must canonicalise every
// topic name it receives.
//
// # Error texts
//
// An error a server sends carries no internal detail: ScrubError
// replaces a message or error_message naming an absolute path (a
// metadata node, a data file; NamesInternalPath) with a generic text for
// its ServerError code, never changing the code, and returns what it
// withheld for the server's log. The carrying field of a command type is
// found by reflection over BaseCommand once and cached; a command with a
// clean text costs a map load and a regexp match.
//
// # Concurrency
//
// Decoder and FrameReader are not safe for concurrent use. The Append and
// Parse functions, and ScrubError, are safe for concurrent use on
// distinct buffers and commands.
package pulsarproto
