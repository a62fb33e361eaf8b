package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/deadletter"
	"github.com/anchord/anchord/internal/store"
)

type deadLettersStub struct{ items []store.DeadLetter }

func (s *deadLettersStub) List(_ context.Context, p store.DeadLetterListParams) ([]store.DeadLetter, error) {
	var out []store.DeadLetter
	for _, d := range s.items {
		if d.ID > p.AfterID && (p.Kind == "" || p.Kind == d.Kind) && len(out) < p.Limit {
			out = append(out, d)
		}
	}
	return out, nil
}

func (s *deadLettersStub) Retry(_ context.Context, id int64) error {
	switch id {
	case 1:
		return nil
	case 2:
		return fmt.Errorf("retry: %w", deadletter.ErrBusy)
	case 3:
		return fmt.Errorf("retry: %w", deadletter.ErrNotRetryable)
	}
	return fmt.Errorf("retry: %w", deadletter.ErrNotFound)
}

func (s *deadLettersStub) Drop(_ context.Context, id int64) error {
	if id == 1 {
		return nil
	}
	return fmt.Errorf("drop: %w", deadletter.ErrNotFound)
}

func adminServer(t *testing.T, token string) string {
	t.Helper()
	stub := &deadLettersStub{}
	for i := int64(1); i <= 3; i++ {
		stub.items = append(stub.items, store.DeadLetter{ID: i, Kind: []string{"operation", "message", "operation"}[i-1], Ref: fmt.Sprint("r", i), Reason: "max attempts", Attempts: 30})
	}
	return setup(t, Config{
		Routes: mountAdmin(AdminRoutes(AdminConfig{DeadLetters: stub})),
		Guard:  func(h http.Handler) http.Handler { return AdminAuth(token, h) },
	}).base
}

// mountAdmin serves the admin routes and the profiler, as the admin listener does.
func mountAdmin(admin func(Router)) func(Router) {
	return func(mux Router) {
		admin(mux)
		DebugRoutes(mux)
	}
}

func authed(t *testing.T, method, url, token string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var body json.RawMessage
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body
}

func TestAdminRequiresTheToken(t *testing.T) {
	t.Parallel()
	base := adminServer(t, "s3cret")
	for _, tok := range []string{"", "wrong"} {
		code, body := authed(t, http.MethodGet, base+"/admin/v1/dead-letters", tok)
		require.Equal(t, http.StatusUnauthorized, code)
		require.Equal(t, "unauthorized", errorCode(t, body))
	}
	code, _ := authed(t, http.MethodGet, base+"/admin/v1/dead-letters", "s3cret")
	require.Equal(t, http.StatusOK, code)
	code, _ = authed(t, http.MethodDelete, base+"/admin/v1/dead-letters/1", "")
	require.Equal(t, http.StatusUnauthorized, code)
	code, _ = authed(t, http.MethodGet, base+"/debug/pprof/", "")
	require.Equal(t, http.StatusUnauthorized, code, "the profiler is behind the admin token too")
	code, _ = authed(t, http.MethodGet, base+"/debug/pprof/goroutine?debug=1", "s3cret")
	require.Equal(t, http.StatusOK, code)
	code, _ = authed(t, http.MethodGet, base+"/debug/pprof/cmdline", "s3cret")
	require.Equal(t, http.StatusNotFound, code, "the command line shows secrets: not served")
	req, err := http.NewRequest(http.MethodGet, base+"/admin/v1/dead-letters", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "bEaReR s3cret")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "the scheme is case-insensitive")
	code, _ = authed(t, http.MethodGet, base+"/healthcheck", "")
	require.Equal(t, http.StatusUnauthorized, code, "every route of the admin listener")
}

// TestAdminWithoutATokenRefusesEverything: an empty token is no token to match, never an open
// door, whatever address the request comes from (this test's is loopback).
func TestAdminWithoutATokenRefusesEverything(t *testing.T) {
	t.Parallel()
	base := adminServer(t, "")
	for _, tok := range []string{"", "anything"} {
		for _, path := range []string{"/admin/v1/dead-letters", "/debug/pprof/", "/healthcheck"} {
			code, _ := authed(t, http.MethodGet, base+path, tok)
			require.Equal(t, http.StatusUnauthorized, code, path)
		}
	}
}

func TestAdminDeadLetters(t *testing.T) {
	t.Parallel()
	base := adminServer(t, "s3cret")
	code, body := authed(t, http.MethodGet, base+"/admin/v1/dead-letters?kind=operation&limit=1", "s3cret")
	require.Equal(t, http.StatusOK, code)
	var page DeadLetterPage
	require.NoError(t, json.Unmarshal(body, &page))
	require.Len(t, page.DeadLetters, 1)
	require.Equal(t, int64(1), page.DeadLetters[0].ID)
	require.NotNil(t, page.Next)
	code, body = authed(t, http.MethodGet, fmt.Sprintf("%s/admin/v1/dead-letters?kind=operation&after=%d", base, *page.Next), "s3cret")
	require.Equal(t, http.StatusOK, code)
	require.NoError(t, json.Unmarshal(body, &page))
	require.Len(t, page.DeadLetters, 1)
	require.Equal(t, int64(3), page.DeadLetters[0].ID)

	for path, want := range map[string]int{
		"/1/retry":    http.StatusOK,
		"/2/retry":    http.StatusConflict,
		"/3/retry":    http.StatusUnprocessableEntity,
		"/9/retry":    http.StatusNotFound,
		"/zero/retry": http.StatusBadRequest,
	} {
		code, _ := authed(t, http.MethodPost, base+"/admin/v1/dead-letters"+path, "s3cret")
		require.Equal(t, want, code, path)
	}
	code, _ = authed(t, http.MethodDelete, base+"/admin/v1/dead-letters/1", "s3cret")
	require.Equal(t, http.StatusOK, code)
	code, _ = authed(t, http.MethodDelete, base+"/admin/v1/dead-letters/5", "s3cret")
	require.Equal(t, http.StatusNotFound, code)
	code, _ = authed(t, http.MethodGet, base+"/admin/v1/dead-letters?kind=bogus", "s3cret")
	require.Equal(t, http.StatusBadRequest, code)
}
