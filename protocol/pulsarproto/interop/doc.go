// Package interop holds only tests: it runs pulsar-client-go against a fake
// broker built on package pulsarproto, and regenerates the golden frames in
// ../testdata (go test ./protocol/pulsarproto/interop -update-golden). It
// lives apart from pulsarproto so that the codec's own tests and fuzz
// targets do not link the client.
package interop
