// Package version reports what this build of Magnetar is: its version
// (set at link time), the commit it was built from (from the Go build's
// VCS stamp) and the Go version.
//
//	go build -ldflags "-X github.com/magnetar-mq/magnetar/internal/version.Version=1.0.0" ./cmd/magnetar
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is the release version, set with -ldflags -X; "dev" otherwise.
var Version = "dev"

// Info describes the build.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"` // "unknown" without a VCS stamp; "-dirty" suffix for modified trees
	GoVersion string `json:"goVersion"`
}

// Get returns the build's Info.
func Get() Info {
	i := Info{Version: Version, Commit: "unknown", GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return i
	}
	if i.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		i.Version = bi.Main.Version
	}
	var rev string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev != "" {
		i.Commit = rev
		if dirty {
			i.Commit += "-dirty"
		}
	}
	return i
}

// String is "VERSION (commit COMMIT, GOVERSION)".
func (i Info) String() string {
	return fmt.Sprintf("%s (commit %s, %s)", i.Version, i.Commit, i.GoVersion)
}
