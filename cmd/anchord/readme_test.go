package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
)

// readmeDefaultAddr is the address the README's commands use; the test runs them against a
// server on a free port instead, so that it never meets another process on 8080.
const readmeDefaultAddr = "127.0.0.1:8080"

// firstDIDBlocks returns the shell blocks of the README's "Your first DID" section: the command
// that starts the server, and the client commands.
func firstDIDBlocks(t *testing.T) (serve string, client string) {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(readme), "\n## Your first DID\n")
	require.True(t, ok, `README.md has no "## Your first DID" section`)
	section, _, _ = strings.Cut(section, "\n## ")
	blocks := regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(section, -1)
	require.Len(t, blocks, 2, "the section has two sh blocks: the server, then the client")
	return strings.TrimSpace(blocks[0][1]), blocks[1][1]
}

// TestReadmeFirstDID runs the README's "Your first DID" commands as written against a fresh
// embedded server: the server with the README's arguments, then the client block in bash,
// ion-sdk from npm included. Only the address changes (a free port for 127.0.0.1:8080), and the
// client block runs in a copy of examples/ so that it leaves nothing in the work tree.
// npm's cache is kept under ~/.cache/anchord/npm, so that once filled the test needs no network.
func TestReadmeFirstDID(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"node", "npm", "curl", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: the README's ion-sdk example cannot run", tool)
		}
	}
	serve, client := firstDIDBlocks(t)
	args, ok := strings.CutPrefix(serve, "go run ./cmd/anchord ")
	require.True(t, ok, "the server block is one `go run ./cmd/anchord …` command: %q", serve)
	require.NotContains(t, args, "\n")

	addr := anchordtest.FreeAddr(t)
	p := anchordtest.StartProcess(t, anchordtest.ProcessConfig{
		Args: append(strings.Fields(args), "--host-url", addr), Addr: addr,
	})
	p.WaitHealthy(30 * time.Second)
	require.Contains(t, p.Log(), `msg="DID method" did_method=ion`)

	work := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(work, "examples"), 0o755))
	for _, f := range []string{"package.json", "package-lock.json", "first-did.mjs"} {
		b, err := os.ReadFile(filepath.Join("../../examples", f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(work, "examples", f), b, 0o644))
	}
	home, err := os.UserHomeDir()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", strings.ReplaceAll(client, readmeDefaultAddr, addr))
	cmd.Dir = work
	cmd.Env = append(os.Environ(),
		"npm_config_cache="+filepath.Join(home, ".cache", "anchord", "npm"),
		"npm_config_prefer_offline=true", "npm_config_audit=false", "npm_config_fund=false",
		"npm_config_update_notifier=false", "npm_config_loglevel=error")
	var stderr anchordtest.SyncBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "README commands failed\nstdout:\n%s\nstderr:\n%s", out, stderr.String())
	t.Logf("the README commands printed:\n%s", out)

	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var did string
	for _, l := range lines {
		if strings.HasPrefix(l, "did:ion:") {
			did = l
			break
		}
	}
	require.NotEmpty(t, did, "first-did.mjs printed the new DID: %s", out)
	require.Regexp(t, `^did:ion:Ei[A-Za-z0-9_-]{44}$`, did, "a short-form ION DID")
	require.Contains(t, string(out), `"published":true`, "the loop ends with the DID published: %s", out)
	last := lines[len(lines)-1]
	require.True(t, strings.HasPrefix(last, `{"id":"`+did+`"`), "the last command prints the document alone: %s", last)
	require.Contains(t, last, `"#key-1"`)
	matches, err := filepath.Glob(filepath.Join(work, "examples", "keys-*.json"))
	require.NoError(t, err)
	require.Len(t, matches, 1, "the DID's keys were kept")
}
