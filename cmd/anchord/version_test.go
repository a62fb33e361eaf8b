package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
)

// TestVersion runs the built binary's `--version` and `version`: both print the module version,
// the revision (stamped by the project's scripts, else recorded by the go command, else
// "unknown" with the reason) and the Go version.
func TestVersion(t *testing.T) {
	t.Parallel()
	bin := anchordtest.Binary(t)
	var outs []string
	for _, arg := range []string{"--version", "version"} {
		out, err := exec.Command(bin, arg).CombinedOutput()
		require.NoError(t, err, "%s: %s", arg, out)
		outs = append(outs, string(out))
		require.Regexp(t, `(?m)^anchord \S+\nrevision: \S+`, string(out), arg)
		require.Regexp(t, `(?m)^go: go1\.`, string(out), arg)
		if rev := os.Getenv("ANCHORD_REVISION"); rev != "" {
			require.Contains(t, string(out), "revision: "+rev, "scripts/test stamps the revision")
		}
	}
	require.Equal(t, outs[0], outs[1])

	// A build with -buildvcs=false and no stamp (GOFLAGS on the development machine) says
	// "unknown" rather than nothing; the in-process command shows it, as a test binary records
	// no VCS information either.
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run([]string{"--version"}, &stdout, &stderr))
	require.Contains(t, stdout.String(), "revision: unknown (built without VCS information")
}

// TestBuildScriptStampsTheRevision builds with scripts/build, as an operator would, and checks
// that the binary names the commit although this machine builds with -buildvcs=false.
func TestBuildScriptStampsTheRevision(t *testing.T) {
	t.Parallel()
	rev, err := exec.Command("../../scripts/revision").Output()
	require.NoError(t, err)
	if strings.TrimSpace(string(rev)) == "unknown" {
		t.Skip("not a git checkout: nothing to stamp")
	}
	bin := filepath.Join(t.TempDir(), "anchord")
	out, err := exec.Command("../../scripts/build", bin).CombinedOutput()
	require.NoError(t, err, "%s", out)
	out, err = exec.Command(bin, "version").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "revision: "+strings.TrimSpace(string(rev))+"\n")
}
