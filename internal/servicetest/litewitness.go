package servicetest

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite" // the "sqlite" driver, to write litewitness's database

	"github.com/anchord/anchord/internal/anchordtest"
)

// litewitnessStartTimeout bounds the wait until a started litewitness answers.
const litewitnessStartTimeout = 30 * time.Second

// emptyTreeHash is the RFC 6962 root of the empty tree, in base64: a new log's tree_hash.
var emptyTreeHash = func() string { h := sha256.Sum256(nil); return base64.StdEncoding.EncodeToString(h[:]) }()

// litewitnessSchema is the schema litewitness creates at start (filippo.io/torchwood
// internal/witness OpenDB): the tests create it first to add the logs it knows, as its
// witnessctl add-log and add-key would (witnessctl does not build here).
const litewitnessSchema = `
CREATE TABLE IF NOT EXISTS log (origin TEXT PRIMARY KEY, tree_size INTEGER NOT NULL, tree_hash TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS key (origin TEXT NOT NULL, key TEXT NOT NULL, FOREIGN KEY(origin) REFERENCES log(origin));`

var vkeyLine = regexp.MustCompile(`msg="verifier key" vkey=(\S+)`)

// Litewitness is an independent C2SP tlog-witness (filippo.io/torchwood's litewitness): its
// Ed25519 key in a private ssh-agent, its known logs in its SQLite database, listening on a
// loopback port. It is stopped and its files removed when the test ends.
type Litewitness struct {
	// Name is the witness's name, the key name of its cosignatures.
	Name string
	// VerifierKey is the vkey of its cosignatures, as litewitness logs it at start.
	VerifierKey string
	// URL is its submission prefix: add-checkpoint is URL + "/add-checkpoint".
	URL string

	tb    testing.TB
	db    string
	agent *exec.Cmd
	cmd   *exec.Cmd
	log   *anchordtest.SyncBuffer
	done  chan struct{}
}

// StartLitewitness starts a litewitness named name that cosigns the logs given as signed-note
// verifier keys (each named by its log's origin). The binary comes from
// ANCHORD_TEST_LITEWITNESS_BIN; ssh-agent, ssh-add and ssh-keygen (Debian's openssh-client)
// must be on PATH.
func StartLitewitness(tb testing.TB, name string, logKeys ...string) *Litewitness {
	tb.Helper()
	bin := anchordtest.LitewitnessBin(tb)
	// A unix socket path is at most 107 bytes: the test's temporary directory may be longer.
	dir, err := os.MkdirTemp("", "lw")
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = os.RemoveAll(dir) })
	w := &Litewitness{Name: name, tb: tb, db: filepath.Join(dir, "litewitness.db"), log: &anchordtest.SyncBuffer{}, done: make(chan struct{})}

	keyFile := filepath.Join(dir, "key")
	out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", keyFile).CombinedOutput()
	require.NoError(tb, err, "ssh-keygen: %s", out)
	pub, err := os.ReadFile(keyFile + ".pub")
	require.NoError(tb, err)
	fields := strings.Fields(string(pub))
	require.GreaterOrEqual(tb, len(fields), 2)
	blob, err := base64.StdEncoding.DecodeString(fields[1])
	require.NoError(tb, err)
	edPub := blob[len(blob)-32:] // the wire form ends with the 32-byte key
	keyHash := sha256.Sum256(edPub)

	sock := filepath.Join(dir, "agent.sock")
	w.agent = exec.Command("ssh-agent", "-D", "-a", sock)
	w.agent.Stdout, w.agent.Stderr = w.log, w.log
	require.NoError(tb, w.agent.Start())
	tb.Cleanup(func() { _ = w.agent.Process.Kill(); _ = w.agent.Wait() })
	anchordtest.Eventually(tb, 10*time.Second, 20*time.Millisecond, func() bool { _, err := os.Stat(sock); return err == nil }, "ssh-agent socket")
	add := exec.Command("ssh-add", keyFile)
	add.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock)
	out, err = add.CombinedOutput()
	require.NoError(tb, err, "ssh-add: %s", out)

	w.AddLogs(logKeys...)
	addr := anchordtest.FreeAddr(tb)
	w.URL = "http://" + addr
	w.cmd = exec.Command(bin, "-db", w.db, "-name", name, "-key", hex.EncodeToString(keyHash[:]), "-ssh-agent", sock, "-listen", addr)
	w.cmd.Stdout, w.cmd.Stderr = w.log, w.log
	require.NoError(tb, w.cmd.Start())
	go func() { _ = w.cmd.Wait(); close(w.done) }()
	tb.Cleanup(w.stop)
	deadline := time.Now().Add(litewitnessStartTimeout)
	for {
		if m := vkeyLine.FindStringSubmatch(w.log.String()); m != nil && w.answers() {
			w.VerifierKey = m[1]
			break
		}
		select {
		case <-w.done:
			tb.Fatalf("litewitness exited at start:\n%s", w.log.String())
		default:
		}
		if time.Now().After(deadline) {
			tb.Fatalf("litewitness did not answer on %s within %s:\n%s", addr, litewitnessStartTimeout, w.log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return w
}

// AddLogs makes the witness know the logs of the given verifier keys (each named by its log's
// origin), starting at size 0, as witnessctl add-log and add-key do; it works while
// litewitness runs.
func (w *Litewitness) AddLogs(logKeys ...string) {
	w.tb.Helper()
	db, err := sql.Open("sqlite", w.db)
	require.NoError(w.tb, err)
	defer db.Close()
	_, err = db.Exec(litewitnessSchema)
	require.NoError(w.tb, err)
	for _, k := range logKeys {
		origin, _, _ := strings.Cut(k, "+")
		_, err := db.Exec("INSERT OR IGNORE INTO log (origin, tree_size, tree_hash) VALUES (?, 0, ?)", origin, emptyTreeHash)
		require.NoError(w.tb, err)
		_, err = db.Exec("INSERT INTO key (origin, key) VALUES (?, ?)", origin, k)
		require.NoError(w.tb, err)
	}
}

// PolicyLine is the witness's line of a tessera witness policy, under the given name.
func (w *Litewitness) PolicyLine(name string) string {
	return fmt.Sprintf("witness %s %s %s\n", name, w.VerifierKey, w.URL)
}

// Log is what litewitness has written to its standard error (and ssh-agent's output).
func (w *Litewitness) Log() string { return w.log.String() }

func (w *Litewitness) answers() bool {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get(w.URL + "/")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return true
}

func (w *Litewitness) stop() {
	_ = w.cmd.Process.Signal(syscall.SIGINT)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	select {
	case <-w.done:
	case <-ctx.Done():
		_ = w.cmd.Process.Kill()
		<-w.done
	}
}
