package zktest

import (
	"testing"

	"github.com/magnetar-mq/magnetar/internal/zkserver"
)

// Server is one running ZooKeeper for tests. Its methods are safe for
// concurrent use.
type Server struct{ *zkserver.Server }

// Start starts a server for the test and returns its "127.0.0.1:port".
// t.Cleanup stops it.
func Start(t testing.TB) string {
	t.Helper()
	return StartServer(t).Addr()
}

// StartServer starts a server for the test; t.Cleanup stops it. Under
// -short (scripts/test unit: no Java) the test is skipped.
func StartServer(t testing.TB) *Server {
	t.Helper()
	SkipIfShort(t)
	s, err := zkserver.Launch(t.TempDir())
	if err != nil {
		t.Fatalf("zktest: %v", err)
	}
	t.Cleanup(s.Stop)
	return &Server{s}
}

// Launch starts a server that outlives any one test, in a directory of its
// own, for a package's tests to share (start it lazily, Close it in
// TestMain). Prefer StartServer.
func Launch() (*Server, error) {
	s, err := zkserver.LaunchTemp()
	if err != nil {
		return nil, err
	}
	return &Server{s}, nil
}

// Restart stops the server if it runs and starts it again on the same port
// with the same data.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	if err := s.Server.Restart(); err != nil {
		t.Fatal(err)
	}
}

// Serving reports whether the server at addr serves requests.
func Serving(addr string) bool { return zkserver.Serving(addr) }

// SkipIfShort skips t under -short: ZooKeeper needs Java, which the unit
// tier (scripts/test unit) does without.
func SkipIfShort(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs ZooKeeper on Java; not in -short (scripts/test unit)")
	}
}
