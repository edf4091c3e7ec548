// Package tokencli is `magnetar tokens`: create-secret-key,
// create-key-pair, create, show and validate, with the key and token
// formats of Pulsar's `pulsar tokens`, so that a key or token made by
// either tool works with both (the formats themselves are package
// auth's). NewCommand builds the command tree; the binary only adds it
// to its root. Pulsar's short flag names (-sk, -pk, ...) are accepted as
// aliases.
package tokencli
