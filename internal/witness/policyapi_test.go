package witness

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/httpapi"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/storetest"
)

type policyServer struct {
	t     *testing.T
	url   string
	token string
	log   *anchordtest.SyncBuffer
}

// newPolicyServer serves PolicyRoutes over st behind the admin token "t0ken", as the admin
// listener does.
func newPolicyServer(t *testing.T, st store.Store) *policyServer {
	t.Helper()
	log := &anchordtest.SyncBuffer{}
	mux := http.NewServeMux()
	PolicyRoutes(st, slog.New(slog.NewTextHandler(log, nil)))(mux)
	srv := httptest.NewServer(httpapi.AdminAuth("t0ken", mux))
	t.Cleanup(srv.Close)
	return &policyServer{t: t, url: srv.URL, token: "t0ken", log: log}
}

func (s *policyServer) do(method, path, body string) (int, http.Header, string) {
	s.t.Helper()
	req, err := http.NewRequestWithContext(s.t.Context(), method, s.url+path, strings.NewReader(body))
	require.NoError(s.t, err)
	if body != "" {
		req.Header.Set("Content-Type", "text/plain")
	}
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(s.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(s.t, err)
	return resp.StatusCode, resp.Header, string(b)
}

func TestPolicyAPI(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	s := newPolicyServer(t, st)

	for _, path := range []string{"/policy", "/admin/v1/policy"} {
		status, h, body := s.do(http.MethodGet, path, "")
		require.Equal(t, http.StatusOK, status, path)
		require.Equal(t, "text/plain; charset=utf-8", h.Get("Content-Type"))
		require.Empty(t, body, "%s: the default policy is the empty text", path)
	}

	status, h, body := s.do(http.MethodPost, "/policy", "OutOf(1,batch)  OutOf(1,system)")
	require.Equal(t, http.StatusBadRequest, status, "a doubled space is an empty token, as in Orb")
	require.Equal(t, "application/json", h.Get("Content-Type"))
	requireError(t, body, "invalid_policy", "rule not supported: ")

	status, _, body = s.do(http.MethodPost, "/policy", "OutOf(3,system) AND OutOf(1,batch) LogRequired\n")
	require.Equal(t, http.StatusOK, status, body)
	require.Equal(t, "OutOf(1,batch) AND OutOf(3,system) LogRequired", body, "answered in canonical form, trailing newline ignored")
	require.Contains(t, s.log.String(), `msg="admin action" action="set witness policy" policy="OutOf(1,batch) AND OutOf(3,system) LogRequired" client=127.0.0.1:`)
	require.Contains(t, s.log.String(), "token=admin")
	for _, path := range []string{"/policy", "/admin/v1/policy"} {
		_, _, body = s.do(http.MethodGet, path, "")
		require.Equal(t, "OutOf(1,batch) AND OutOf(3,system) LogRequired", body, path)
	}
	p, err := LoadPolicy(t.Context(), st)
	require.NoError(t, err)
	require.Equal(t, mustParse(t, "OutOf(3,system) AND OutOf(1,batch) LogRequired"), p, "what the server stored is what the witnessing reads")

	status, _, body = s.do(http.MethodPost, "/admin/v1/policy", "MinPercent(30,system) OR MinPercent(70,batch)")
	require.Equal(t, http.StatusOK, status, body)
	require.Equal(t, "MinPercent(70,batch) OR MinPercent(30,system)", body)

	// Refused policies leave the stored one as it was, with Orb's parser message.
	for text, msg := range map[string]string{
		"OutOf(x,system)":                       `first argument for OutOf policy must be an integer: strconv.Atoi: parsing "x": invalid syntax`,
		"OutOf(1,witness)":                      "role 'witness' not supported for OutOf policy",
		"MinPercent(101,batch)":                 "first argument for OutOf policy must be an integer between 0 and 100",
		"OutOf(1)":                              "expected 2 but got 1 arguments for OutOf policy",
		"Quorum(2)":                             "rule not supported: Quorum(2)",
		strings.Repeat("AND ", MaxPolicyLength): "parse witness policy: longer than 1024 bytes",
	} {
		status, _, body := s.do(http.MethodPost, "/policy", text)
		require.Equal(t, http.StatusBadRequest, status, text)
		requireError(t, body, "invalid_policy", msg)
	}
	_, _, body = s.do(http.MethodGet, "/policy", "")
	require.Equal(t, "MinPercent(70,batch) OR MinPercent(30,system)", body)

	status, _, body = s.do(http.MethodPost, "/policy", "")
	require.Equal(t, http.StatusOK, status, body)
	require.Empty(t, body, "an empty body sets the default policy back")
	p, err = LoadPolicy(t.Context(), st)
	require.NoError(t, err)
	require.Equal(t, DefaultPolicy(), p)

	s.token = ""
	status, _, _ = s.do(http.MethodGet, "/policy", "")
	require.Equal(t, http.StatusUnauthorized, status, "behind the admin token")
	status, _, _ = s.do(http.MethodPost, "/admin/v1/policy", "OutOf(1,system)")
	require.Equal(t, http.StatusUnauthorized, status)
}

func TestPolicyAPIStoreFailure(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	s := newPolicyServer(t, st)

	require.NoError(t, st.SettingPut(t.Context(), PolicySetting, []byte("OutOf(x,system)")))
	status, h, body := s.do(http.MethodGet, "/policy", "")
	require.Equal(t, http.StatusServiceUnavailable, status, "a stored policy that no longer parses")
	require.Equal(t, "1", h.Get("Retry-After"))
	requireError(t, body, "unavailable", "witness policy unavailable")
	require.Contains(t, s.log.String(), `load witness policy \"OutOf(x,system)\"`)
	status, _, body = s.do(http.MethodPost, "/policy", "OutOf(1,system)")
	require.Equal(t, http.StatusOK, status, "posting a valid policy repairs it")
	require.Equal(t, "OutOf(1,system)", body)

	st.Close()
	status, _, body = s.do(http.MethodGet, "/policy", "")
	require.Equal(t, http.StatusServiceUnavailable, status)
	requireError(t, body, "unavailable", "witness policy unavailable")
	status, _, _ = s.do(http.MethodPost, "/policy", "OutOf(2,system)")
	require.Equal(t, http.StatusServiceUnavailable, status)
}

func requireError(t *testing.T, body, code, message string) {
	t.Helper()
	var e httpapi.ErrorBody
	require.NoError(t, json.Unmarshal([]byte(body), &e), body)
	require.Equal(t, code, e.Code, body)
	require.Contains(t, e.Message, message, body)
}
