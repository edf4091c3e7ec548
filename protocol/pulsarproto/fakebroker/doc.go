// Package fakebroker is the one fake Pulsar broker of the tests: a
// listener on 127.0.0.1 that speaks just enough of the binary protocol
// (package pulsarproto) for a client to connect, look topics up and open
// producers and consumers, and hands everything else to the test.
//
// It answers by itself, on each connection's goroutine:
//
//	CONNECT              CONNECTED (Options.Connected; default server
//	                     "fake", protocol 20, 5 MiB messages)
//	PING                 PONG
//	PARTITIONED_METADATA 0 partitions (a non-partitioned topic)
//	LOOKUP               Options.Lookup, default Connect to the fake itself
//	PRODUCER             PRODUCER_SUCCESS, name "standalone-0-<id>",
//	                     last sequence id -1
//	SUBSCRIBE            SUCCESS
//	CLOSE_PRODUCER/_CONSUMER  SUCCESS, after the connection's handler saw it
//
// Every other frame goes to the connection's handler (Options.Handler,
// made once per connection after CONNECTED); without one it is ignored.
// The topic names of PARTITIONED_METADATA, LOOKUP, PRODUCER and SUBSCRIBE
// go to Options.Topic first. A handler or Topic error ends that connection
// and is kept (Broker.Errors); io.EOF and a closed connection are not
// errors. With Options.Echo the connection, after CONNECTED, echoes every
// byte it reads (a relayed connection, as through a proxy).
//
// Frames are valid only during the call that gets them (the reader reuses
// its buffers). Conn's writes are serialised, so a handler may write from
// other goroutines too. Start registers Close with the test; Close is
// idempotent and waits for every connection's goroutine.
package fakebroker
