package buildinfo

import (
	"bytes"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFromBuildInfo(t *testing.T) {
	t.Parallel()
	vcs := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/anchord/anchord", Version: "v0.0.0-20260101000000-0123456789ab+dirty"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef"}, {Key: "vcs.modified", Value: "true"}, {Key: "vcs.time", Value: "2026-01-01T00:00:00Z"},
		},
	}
	noVCS := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/anchord/anchord", Version: "(devel)"}}
	for name, tc := range map[string]struct {
		bi                *debug.BuildInfo
		version, revision string
		want              Info
		line              string
	}{
		"recorded by go":  {vcs, "", "", Info{Version: vcs.Main.Version, Revision: "0123456789abcdef", Modified: true, Time: "2026-01-01T00:00:00Z", GoVersion: "go1.26.8"}, "revision: 0123456789abcdef (with uncommitted changes)"},
		"-buildvcs=false": {noVCS, "", "", Info{Version: "(devel)", Revision: Unknown, GoVersion: "go1.26.8"}, "revision: unknown (built without VCS information"},
		"stamped":         {noVCS, "v1.2.3", "fedcba9876543210", Info{Version: "v1.2.3", Revision: "fedcba9876543210", GoVersion: "go1.26.8"}, "revision: fedcba9876543210\n"},
		"stamp wins":      {vcs, "", "fedcba", Info{Version: vcs.Main.Version, Revision: "fedcba", Modified: true, Time: "2026-01-01T00:00:00Z", GoVersion: "go1.26.8"}, "revision: fedcba"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := FromBuildInfo(tc.bi, tc.version, tc.revision)
			require.Equal(t, tc.want, got)
			var b bytes.Buffer
			got.Write(&b)
			require.Contains(t, b.String(), "anchord "+tc.want.Version+"\n")
			require.Contains(t, b.String(), tc.line)
			require.Contains(t, b.String(), "go: go1.26.8\n")
		})
	}
}

func TestReadWithoutBuildRecord(t *testing.T) {
	t.Parallel()
	got := FromBuildInfo(nil, "", "")
	require.Equal(t, "(devel)", got.Version)
	require.Equal(t, Unknown, got.Revision)
	require.NotEmpty(t, got.GoVersion)
	// A test binary has a build record but no VCS settings: the revision is unknown, not empty.
	require.Equal(t, Unknown, Read("", "").Revision)
}
