// Package version reports edgectl's own version. Release builds set Version
// with -ldflags "-X github.com/edgectl/edgectl/internal/version.Version=v1.2.3";
// development builds fall back to the module build info.
package version

import (
	"runtime"
	"runtime/debug"
)

// Version is set at link time; "dev" otherwise.
var Version = "dev"

// Info is what `edgectl version --json` prints.
type Info struct {
	Version   string `json:"version"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
	Revision  string `json:"revision,omitempty"`
}

// Get returns the version information of the running binary.
func Get() Info {
	i := Info{Version: Version, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				i.Revision = s.Value
			}
		}
	}
	return i
}

// String is the version for headers and manifests.
func String() string { return Version }
