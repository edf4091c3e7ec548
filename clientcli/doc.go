// Package clientcli is `magnetar client produce|consume`: a quick-test
// client like Pulsar's pulsar-client, on the project's own protocol
// client (pulsarclient). NewCommand builds the command tree; the binary
// only adds it to its root.
//
// produce sends each -m message (split at --separator) and each -f
// file's content as one message, the whole list --num-produce times,
// optionally paced (--rate), and prints the message ids. consume
// subscribes and prints --num-messages messages (0: until interrupted)
// as text, a hex dump or one JSON object per message (ConsumedMessage),
// acknowledging each unless --no-ack.
package clientcli
