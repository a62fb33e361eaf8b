package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/admintoken"
	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/sidetree/wallet"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/sqlitestore"
)

// TestAdminDeadLettersCLI parks an operation in a running anchord's store, then lists, retries
// and drops dead letters with `anchord admin dead-letters` over the admin API, with a token.
func TestAdminDeadLettersCLI(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	addr := anchordtest.FreeAddr(t)
	p := anchordtest.StartProcess(t, anchordtest.ProcessConfig{
		Args: []string{"serve", "--host-url", addr, "--batch-writer-timeout", "100ms", "--admin-token", "t0ken"}, Dir: dir, Addr: addr,
	})
	p.WaitHealthy(30 * time.Second)
	adminAddr := p.AdminAddr()

	// Two parked operations, written by a second connection to the same database (as the queue
	// would after max attempts).
	st, err := sqlitestore.Open(context.Background(), sqlitestore.Config{DataDir: dir + "/data"})
	require.NoError(t, err)
	id, req, err := wallet.New(wallet.Config{}).Create()
	require.NoError(t, err)
	keep, err := st.DeadLetterInsert(context.Background(), store.DeadLetter{Kind: store.DeadLetterOperation, Ref: "op-a", Payload: req, Reason: "max attempts reached: cas down", Attempts: 30, History: []string{"attempt 30: cas down"}})
	require.NoError(t, err)
	junk, err := st.DeadLetterInsert(context.Background(), store.DeadLetter{Kind: store.DeadLetterOperation, Ref: "op-b", Payload: []byte("{}"), Reason: "invalid operation", Attempts: 1})
	require.NoError(t, err)
	st.Close()

	admin := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		env := func(k string) (string, bool) {
			switch k {
			case "ANCHORD_TARGET":
				return "http://" + adminAddr, true
			case "ANCHORD_ADMIN_TOKEN":
				return "t0ken", true
			}
			return "", false
		}
		code := runWithEnv(append([]string{"admin", "dead-letters"}, args...), env, &out, &errOut)
		return code, out.String(), errOut.String()
	}

	code, out, errOut := admin("list")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "op-a")
	require.Contains(t, out, "max attempts reached: cas down")
	require.Contains(t, out, "op-b")

	code, out, errOut = admin("list", "--json", "--limit", "1")
	require.Equal(t, 0, code, errOut)
	require.True(t, strings.HasPrefix(out, `{"deadLetters":[`), out)

	code, out, errOut = admin("retry", strconv.FormatInt(keep, 10))
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "retried")
	c := newClient(addr)
	anchordtest.Eventually(t, 30*time.Second, 20*time.Millisecond, func() bool {
		status, _, err := c.resolve(id.DID())
		return err == nil && status == http.StatusOK
	}, "the retried create never became resolvable")

	code, _, errOut = admin("retry", strconv.FormatInt(junk, 10))
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "not_retryable")

	code, out, errOut = admin("drop", strconv.FormatInt(junk, 10))
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "dropped")
	code, out, _ = admin("list")
	require.Equal(t, 0, code)
	require.NotContains(t, out, "op-b")

	var out2, errOut2 bytes.Buffer
	require.Equal(t, 1, runWithEnv([]string{"admin", "dead-letters", "list", "--target", "http://" + adminAddr}, func(string) (string, bool) { return "", false }, &out2, &errOut2))
	require.Contains(t, errOut2.String(), "401 unauthorized")
	require.Regexp(t, `msg="admin action" component=admin action="dead-letter retry" id=\d+ client=127\.0\.0\.1:\d+ token=admin`, p.Log(), "admin actions are logged with who asked")

	// The API listener serves neither the admin API nor the profiler.
	for _, path := range []string{"/admin/v1/dead-letters", "/debug/pprof/"} {
		resp, err := http.Get("http://" + addr + path)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusNotFound, resp.StatusCode, path)
	}
}

// TestAdminOnAPublicAddressNeedsAToken: serving the admin API on a non-loopback address without
// a token is refused at start with one line.
func TestAdminOnAPublicAddressNeedsAToken(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	code := runWithEnv([]string{"serve", "--data-dir", t.TempDir(), "--admin-addr", "0.0.0.0:0"}, func(string) (string, bool) { return "", false }, &out, &errOut)
	require.NotEqual(t, 0, code)
	require.Equal(t, 1, strings.Count(strings.TrimSpace(errOut.String()), "\n")+1, errOut.String())
	require.Contains(t, errOut.String(), "--admin-addr")
	require.Contains(t, errOut.String(), "--admin-token")
}

// TestAdminTokenMadeAtFirstStart: a server given no --admin-token makes one in its data
// directory (0600), never logs it, and refuses every admin request without it, from loopback
// too; `anchord admin` finds it through --data-dir (or ANCHORD_DATA_DIR), and a restart keeps it.
func TestAdminTokenMadeAtFirstStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	addr := anchordtest.FreeAddr(t)
	args := []string{"serve", "--host-url", addr, "--data-dir", dir + "/data"}
	p := anchordtest.StartProcess(t, anchordtest.ProcessConfig{Args: args, Dir: dir, Addr: addr})
	p.WaitHealthy(30 * time.Second)
	adminAddr := p.AdminAddr()
	token := p.AdminToken()
	require.Regexp(t, `^[0-9a-f]{64}$`, token)
	fi, err := os.Stat(admintoken.Path(dir + "/data"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	require.Contains(t, p.Log(), `msg="admin token" source=file`)
	require.NotContains(t, p.Log(), token, "the token is never logged")

	for _, path := range []string{"/admin/v1/dead-letters", "/debug/pprof/", "/policy", "/healthcheck"} {
		resp, err := http.Get("http://" + adminAddr + path)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "loopback is no credential: %s", path)
	}

	list := func(env map[string]string, args ...string) (int, string) {
		var out, errOut bytes.Buffer
		code := runWithEnv(append([]string{"admin", "dead-letters", "list", "--target", "http://" + adminAddr}, args...),
			func(k string) (string, bool) { v, ok := env[k]; return v, ok }, &out, &errOut)
		return code, out.String() + errOut.String()
	}
	code, out := list(nil, "--data-dir", dir+"/data")
	require.Equal(t, 0, code, out)
	code, out = list(map[string]string{"ANCHORD_DATA_DIR": dir + "/data"})
	require.Equal(t, 0, code, out)
	code, out = list(nil, "--data-dir", t.TempDir())
	require.Equal(t, 1, code)
	require.Contains(t, out, "401 unauthorized: the admin API needs its token")
	code, out = list(nil, "--data-dir", dir+"/data", "--admin-token", "wrong")
	require.Equal(t, 1, code, "a token given wins over the file")
	require.Contains(t, out, "401 unauthorized")

	p.Signal(syscall.SIGTERM)
	_, err = p.Wait(30 * time.Second)
	require.NoError(t, err)
	p = anchordtest.StartProcess(t, anchordtest.ProcessConfig{Args: args, Dir: dir, Addr: addr})
	p.WaitHealthy(30 * time.Second)
	require.Equal(t, token, p.AdminToken(), "a restart keeps the token")
	require.Contains(t, p.Log(), `created=false`)
}
