package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/store/sqlitestore"
	"github.com/anchord/anchord/internal/witness"
)

// TestAdminPolicyCLI sets and reads the witness policy of a running embedded anchord with
// `anchord admin policy`, over the admin API with a token: a valid policy is stored in canonical
// form and served at Orb's /policy too; an invalid one is refused with 400 and Orb's message,
// leaving the stored policy as it was.
func TestAdminPolicyCLI(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	addr := anchordtest.FreeAddr(t)
	p := anchordtest.StartProcess(t, anchordtest.ProcessConfig{
		Args: []string{"serve", "--host-url", addr, "--admin-token", "t0ken"}, Dir: dir, Addr: addr,
	})
	p.WaitHealthy(30 * time.Second)
	adminAddr := p.AdminAddr()

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
		code := runWithEnv(append([]string{"admin", "policy"}, args...), env, &out, &errOut)
		return code, out.String(), errOut.String()
	}

	code, out, errOut := admin("get")
	require.Equal(t, 0, code, errOut)
	require.Empty(t, out, "nothing set: the default policy, the empty text")
	require.Contains(t, errOut, "the default witness policy")

	code, out, errOut = admin("set", "OutOf(1,system)")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "OutOf(1,system)\n", out)
	code, out, errOut = admin("get")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "OutOf(1,system)\n", out)

	code, out, errOut = admin("set", "OutOf(x,system)")
	require.Equal(t, 1, code, out)
	require.Contains(t, errOut, `POST /admin/v1/policy: 400 invalid_policy: first argument for OutOf policy must be an integer: strconv.Atoi: parsing "x": invalid syntax`)
	code, out, errOut = admin("get")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "OutOf(1,system)\n", out, "a refused policy changes nothing")

	code, _, errOut = admin("set", "OutOf(1,system)", "AND")
	require.Equal(t, 2, code, "an unquoted policy is refused before it is sent")
	require.Contains(t, errOut, "one argument, quoted")

	// Orb's route on the same listener, behind the same token.
	get := func(token string) (int, string) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+adminAddr+"/policy", nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	status, body := get("t0ken")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "OutOf(1,system)", body)
	status, _ = get("")
	require.Equal(t, http.StatusUnauthorized, status)
	status, _ = get("wrong")
	require.Equal(t, http.StatusUnauthorized, status)

	// What the witnessing reads from the store is what was set.
	st, err := sqlitestore.Open(context.Background(), sqlitestore.Config{DataDir: dir + "/data"})
	require.NoError(t, err)
	defer st.Close()
	got, err := witness.LoadPolicy(context.Background(), st)
	require.NoError(t, err)
	want, err := witness.Parse("OutOf(1,system)")
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.Contains(t, p.Log(), `action="set witness policy" policy=OutOf(1,system) client=`)
	require.Contains(t, p.Log(), "token=admin", "the audit line names the token")

	code, out, errOut = admin("set", "")
	require.Equal(t, 0, code, errOut)
	require.Empty(t, out)
	require.Contains(t, errOut, "the default witness policy", "'' sets the default back")
	got, err = witness.LoadPolicy(context.Background(), st)
	require.NoError(t, err)
	require.Equal(t, witness.DefaultPolicy(), got)
}
