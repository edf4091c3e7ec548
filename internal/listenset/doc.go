// Package listenset binds the sockets of a server that speaks the
// Pulsar binary protocol and HTTP, each in plaintext and over TLS: the
// broker's listeners and the proxy's.
//
// Invariants: Bind binds every address it is given or none (on an error
// the listeners bound so far are closed); a listener asked for is bound
// before Bind returns, so every bound address (and the advertised URLs
// built from it) is known before anything is served. The binary TLS
// listener is wrapped with the TLS configuration, the HTTPS one is not
// (the HTTP server serves it with the configuration, and so negotiates
// HTTP/2). The bound addresses are safe to read from any goroutine, ""
// before Bind and for a listener not asked for. It imports nothing of
// the project.
package listenset
