package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/pubsub/amqppubsub"
	"github.com/anchord/anchord/internal/store/storetest"
)

// The README's walkthrough: its sections, in order, that a new user follows in one clone.
var readmeWalkthrough = []string{"Run it", "Your first DID", "Run it as a cluster", "Anchor on a ledger"}

// The README's service URLs, which the test swaps for its own (a fresh schema, the test broker).
const (
	readmeDatabaseURL = "postgres://postgres@127.0.0.1:5432/anchord?sslmode=disable"
	readmeAMQPURL     = "amqp://guest:guest@127.0.0.1:5672/"
)

// TestReadmeSectionsInOrder runs the README's walkthrough as written, one section after the
// other, in one fresh working directory (a fresh clone's: no ./data yet), stopping each
// section's servers with Ctrl-C's SIGINT before the next, as a reader does. Only addresses
// change: every 127.0.0.1 port of the README (and the defaults, 8080, 8081 and 8008, through
// their ANCHORD_* variables) becomes a free port, the database URL a fresh schema and the
// broker's a fresh prefix. The first DID's client block runs ion-sdk from npm, whose cache is
// kept under ~/.cache/anchord/npm, so that once filled the test needs no network.
func TestReadmeSectionsInOrder(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"node", "npm", "curl", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: the README's ion-sdk example cannot run", tool)
		}
	}
	r := newReadmeRun(t)
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)

	for _, name := range readmeWalkthrough {
		blocks := sectionBlocks(t, string(readme), name)
		t.Logf("section %q: %d blocks", name, len(blocks))
		for _, block := range blocks {
			r.runBlock(block)
		}
		switch name {
		case "Run it":
			require.DirExists(t, filepath.Join(r.dir, "data"), "the embedded mode keeps its data under ./data")
		case "Your first DID":
			require.Contains(t, r.running[0].Log(), `msg="DID method" did_method=ion`)
			require.DirExists(t, filepath.Join(r.dir, "data-ion"))
		case "Run it as a cluster":
			require.Len(t, r.running, 2, "two instances on one host")
			for _, p := range r.running {
				require.Contains(t, p.Log(), "shape=cluster")
			}
		case "Anchor on a ledger":
			require.Contains(t, r.running[len(r.running)-1].Log(), "anchor_backend=ledger")
		}
		r.stopAll()
	}
}

// readmeRun is one reader's clone: its working directory, the ports its commands were given,
// and the servers of the current section.
type readmeRun struct {
	t       *testing.T
	dir     string
	addrs   map[string]string // README address → the free one used instead
	env     []string
	dbURL   string
	amqpURL string
	running []*anchordtest.Process
}

func newReadmeRun(t *testing.T) *readmeRun {
	r := &readmeRun{t: t, dir: t.TempDir(), addrs: map[string]string{}, dbURL: storetest.PostgresURL(t), amqpURL: anchordtest.AMQPURL(t)}
	prefix := randomPrefix(t)
	t.Cleanup(func() {
		if err := amqppubsub.RemoveTopology(amqppubsub.Config{URL: r.amqpURL, Prefix: prefix}); err != nil {
			t.Logf("remove RabbitMQ topology %s: %v", prefix, err)
		}
	})
	// A fresh clone holds examples/, which the first DID's client block uses.
	require.NoError(t, os.Mkdir(filepath.Join(r.dir, "examples"), 0o755))
	for _, f := range []string{"package.json", "package-lock.json", "first-did.mjs"} {
		b, err := os.ReadFile(filepath.Join("../../examples", f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(r.dir, "examples", f), b, 0o644))
	}
	home, err := os.UserHomeDir()
	require.NoError(t, err)
	r.env = []string{
		"ANCHORD_HOST_URL=" + r.addr("127.0.0.1:8080"), "ANCHORD_ADMIN_ADDR=" + r.addr("127.0.0.1:8081"),
		"ANCHORD_DEVLEDGER_ADDR=" + r.addr("127.0.0.1:8008"), "ANCHORD_MQ_PREFIX=" + prefix,
		"npm_config_cache=" + filepath.Join(home, ".cache", "anchord", "npm"),
		"npm_config_prefer_offline=true", "npm_config_audit=false", "npm_config_fund=false",
		"npm_config_update_notifier=false", "npm_config_loglevel=error",
	}
	return r
}

// addr returns the free address standing for a README address, the same one each time.
func (r *readmeRun) addr(readmeAddr string) string {
	if a, ok := r.addrs[readmeAddr]; ok {
		return a
	}
	a := anchordtest.FreeAddr(r.t)
	r.addrs[readmeAddr] = a
	return a
}

var readmeAddrPattern = regexp.MustCompile(`(127\.0\.0\.1|localhost):(\d+)`)

// rewrite swaps the README's addresses and service URLs for the test's.
func (r *readmeRun) rewrite(s string) string {
	s = strings.ReplaceAll(s, readmeDatabaseURL, r.dbURL)
	s = strings.ReplaceAll(s, readmeAMQPURL, r.amqpURL)
	return readmeAddrPattern.ReplaceAllStringFunc(s, func(a string) string {
		if strings.HasSuffix(a, ":5432") || strings.HasSuffix(a, ":5672") {
			return a
		}
		return r.addr(strings.Replace(a, "localhost", "127.0.0.1", 1))
	})
}

// runBlock runs a shell block: each `go run ./cmd/anchord` command on the binary (serve and
// devledger keep running, anything else must exit 0), any other block in bash.
func (r *readmeRun) runBlock(block string) {
	t := r.t
	block = strings.ReplaceAll(block, "\\\n", " ")
	if !strings.HasPrefix(strings.TrimSpace(block), "go run ./cmd/anchord ") {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", r.rewrite(block))
		cmd.Dir, cmd.Env = r.dir, append(os.Environ(), r.env...)
		var stderr anchordtest.SyncBuffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		require.NoError(t, err, "README commands failed:\n%s\nstdout:\n%s\nstderr:\n%s", block, out, stderr.String())
		t.Logf("README commands printed:\n%s", out)
		r.checkFirstDID(string(out))
		return
	}
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		line = strings.TrimSuffix(strings.TrimSpace(line), "&")
		rest, ok := strings.CutPrefix(line, "go run ./cmd/anchord ")
		require.True(t, ok, "a block of anchord commands holds nothing else: %q", line)
		args := shellWords(t, r.rewrite(rest))
		if slices.Contains(args, "--help") {
			var out anchordtest.SyncBuffer
			cmd := exec.Command(anchordtest.Binary(t), args...)
			cmd.Dir, cmd.Env, cmd.Stdout = r.dir, append(os.Environ(), r.env...), &out
			require.NoError(t, cmd.Run(), line)
			require.Contains(t, out.String(), "--host-url")
			continue
		}
		addr := r.addr("127.0.0.1:8080")
		if i := slices.Index(args, "--host-url"); i >= 0 {
			addr = args[i+1]
		}
		p := anchordtest.StartProcess(t, anchordtest.ProcessConfig{Args: args, Env: r.env, Dir: r.dir, Addr: addr})
		r.running = append(r.running, p)
		switch args[0] {
		case "serve":
			p.WaitHealthy(60 * time.Second)
		case "devledger":
			// The server of the next line would start without its ledger and only the end
			// of the section would notice; the ledger has no health route, so dial it.
			ledger := r.addr("127.0.0.1:8008")
			anchordtest.Eventually(t, 30*time.Second, 20*time.Millisecond, func() bool {
				if p.Exited() {
					t.Fatalf("the development ledger exited:\n%s", p.Log())
				}
				c, err := net.DialTimeout("tcp", ledger, time.Second)
				if err == nil {
					c.Close()
				}
				return err == nil
			}, "the development ledger listens on %s", ledger)
		}
	}
}

// checkFirstDID checks what the first DID's client block printed, as the README says.
func (r *readmeRun) checkFirstDID(out string) {
	t := r.t
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var did string
	for _, l := range lines {
		if strings.HasPrefix(l, "did:ion:") {
			did = l
			break
		}
	}
	require.Regexp(t, `^did:ion:Ei[A-Za-z0-9_-]{44}$`, did, "first-did.mjs printed a short-form ION DID: %s", out)
	require.Contains(t, out, `"published":true`, "the loop ends with the DID published")
	last := lines[len(lines)-1]
	require.True(t, strings.HasPrefix(last, `{"id":"`+did+`"`), "the last command prints the document alone: %s", last)
	require.Contains(t, last, `"#key-1"`)
	matches, err := filepath.Glob(filepath.Join(r.dir, "examples", "keys-*.json"))
	require.NoError(t, err)
	require.Len(t, matches, 1, "the DID's keys were kept")
}

// stopAll stops the section's processes as Ctrl-C does; each exits 0.
func (r *readmeRun) stopAll() {
	for _, p := range slices.Backward(r.running) {
		p.Signal(syscall.SIGINT)
		code, err := p.Wait(30 * time.Second)
		require.NoError(r.t, err)
		require.Equal(r.t, 0, code, p.Log())
	}
	r.running = nil
}

// sectionBlocks returns the sh blocks of the README section named name, in order.
func sectionBlocks(t *testing.T, readme, name string) []string {
	t.Helper()
	_, section, ok := strings.Cut(readme, "\n## "+name+"\n")
	require.True(t, ok, "README.md has no %q section", name)
	section, _, _ = strings.Cut(section, "\n## ")
	var blocks []string
	for _, m := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(section, -1) {
		blocks = append(blocks, m[1])
	}
	require.NotEmpty(t, blocks, "section %q has no sh block", name)
	return blocks
}

// shellWords splits a command line as the shell does for the README's commands: words apart by
// spaces, single-quoted strings kept whole.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	inWord, quoted := false, false
	for _, c := range line {
		switch {
		case quoted && c == '\'':
			quoted = false
		case quoted:
			cur.WriteRune(c)
		case c == '\'':
			quoted, inWord = true, true
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(c)
			inWord = true
		}
	}
	require.False(t, quoted, "unbalanced quote in %q", line)
	if inWord {
		words = append(words, cur.String())
	}
	return words
}
