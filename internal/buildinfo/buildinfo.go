// Package buildinfo says which anchord this is: the module version, the VCS revision and the Go
// version, from what the linker stamped (-ldflags -X) and what the go command recorded
// (debug.ReadBuildInfo). `anchord version`, GET /version and anchord_build_info all read it here,
// so the three never disagree.
package buildinfo

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// Unknown is the revision when neither the linker nor the go command recorded one: a build with
// GOFLAGS=-buildvcs=false, `go run` outside a checkout, or a test binary.
const Unknown = "unknown"

// Info describes one build.
type Info struct {
	// Version is the stamped version, else the main module's version ("(devel)" for a build
	// from a checkout).
	Version string `json:"version"`
	// Revision is the stamped revision, else the VCS revision the go command recorded, else
	// Unknown.
	Revision string `json:"revision"`
	// Modified tells that the checkout had uncommitted changes (only known from the go command).
	Modified bool `json:"modified,omitempty"`
	// Time is the commit time the go command recorded, if any (RFC 3339).
	Time      string `json:"time,omitempty"`
	GoVersion string `json:"goVersion"`
}

// Read returns the running binary's Info. version and revision are what the linker stamped into
// package main (empty when nothing was); a stamp wins over the recorded build settings, because
// the project's scripts stamp precisely where the go command cannot record (-buildvcs=false).
func Read(version, revision string) Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return FromBuildInfo(bi, version, revision)
}

// FromBuildInfo is Read over a given build record (nil when there is none).
func FromBuildInfo(bi *debug.BuildInfo, version, revision string) Info {
	info := Info{Version: version, Revision: revision, GoVersion: runtime.Version()}
	if bi != nil {
		if info.Version == "" {
			info.Version = bi.Main.Version
		}
		if bi.GoVersion != "" {
			info.GoVersion = bi.GoVersion
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if info.Revision == "" {
					info.Revision = s.Value
				}
			case "vcs.modified":
				info.Modified = s.Value == "true"
			case "vcs.time":
				info.Time = s.Value
			}
		}
	}
	if info.Version == "" {
		info.Version = "(devel)"
	}
	if info.Revision == "" {
		info.Revision = Unknown
	}
	return info
}

// Write prints the Info for a person, one fact per line. An unknown revision says why it may be
// unknown, so that an operator reading a bug report knows what to rebuild with.
func (i Info) Write(w io.Writer) {
	fmt.Fprintf(w, "anchord %s\n", i.Version)
	switch {
	case i.Revision == Unknown:
		fmt.Fprintf(w, "revision: %s (built without VCS information, e.g. GOFLAGS=-buildvcs=false; scripts/build stamps it)\n", Unknown)
	case i.Modified:
		fmt.Fprintf(w, "revision: %s (with uncommitted changes)\n", i.Revision)
	default:
		fmt.Fprintf(w, "revision: %s\n", i.Revision)
	}
	if i.Time != "" {
		fmt.Fprintf(w, "commit time: %s\n", i.Time)
	}
	fmt.Fprintf(w, "go: %s\n", i.GoVersion)
}
