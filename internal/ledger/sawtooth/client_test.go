package sawtooth_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/devledger"
	"github.com/anchord/anchord/internal/devledger/devledgertest"
	"github.com/anchord/anchord/internal/ledger"
	"github.com/anchord/anchord/internal/ledger/sawtooth"
	"github.com/anchord/anchord/internal/ledgertest"
)

func newClient(tb testing.TB, url string, timeout time.Duration) *sawtooth.Client {
	tb.Helper()
	hc := sawtooth.NewHTTPClient(nil)
	tb.Cleanup(hc.CloseIdleConnections)
	c, err := sawtooth.New(sawtooth.Config{URL: url, Timeout: timeout, HTTPClient: hc})
	require.NoError(tb, err)
	return c
}

func TestClientConformance(t *testing.T) {
	t.Parallel()
	ledgertest.Exercise(t, ledgertest.Features{StatusChunk: sawtooth.StatusesPostLimit},
		func(tb testing.TB, url string, timeout time.Duration) ledger.Client {
			return newClient(tb, url, timeout)
		})
}

func TestNewClient(t *testing.T) {
	t.Parallel()

	for url, wantErr := range map[string]string{
		"":                      "URL is empty",
		"localhost:8008":        "want http(s)",
		"ftp://host":            "want http(s)",
		"http://":               "want http(s)",
		"http://host/?q=1":      "no query",
		"http://host:8008":      "",
		"https://host/sawtooth": "",
	} {
		_, err := sawtooth.New(sawtooth.Config{URL: url})
		if wantErr == "" {
			require.NoError(t, err, url)
		} else {
			require.ErrorContains(t, err, wantErr, url)
		}
	}
	_, err := sawtooth.New(sawtooth.Config{URL: "http://h", Timeout: -time.Second})
	require.ErrorContains(t, err, "negative timeout")
}

func TestClientSubmitSendsOctetStream(t *testing.T) {
	t.Parallel()
	l := devledgertest.Start(t, devledger.Config{})
	c := newClient(t, l.URL+"/", time.Second) // a trailing slash is fine

	r := c.Submit(t.Context(), build(t, sawtooth.BuildParams{Anchor: "1.QmOctet"}).Bytes, "ignored")
	require.Equal(t, ledger.Accepted, r.Class, "%s", r)
	reqs := l.Requests()
	require.Len(t, reqs, 1)
	require.Equal(t, http.MethodPost, reqs[0].Method)
	require.Equal(t, "/batches", reqs[0].Path)
	require.Equal(t, "application/octet-stream", reqs[0].Header.Get("Content-Type"))
}

func TestClientSawtoothErrorCodes(t *testing.T) {
	t.Parallel()

	for name, tc := range map[string]struct {
		cfg       devledger.Config
		wantClass ledger.Class
		wantCode  string
		wantMaybe bool
	}{
		"503 validator disconnected": {devledger.Config{Faults: devledger.FaultConfig{Unavailable: 1}}, ledger.Retry, "18", false},
		"429 queue full":             {devledger.Config{Faults: devledger.FaultConfig{TooManyRequests: 1}}, ledger.Retry, "31", false},
		"400 batches invalid":        {devledger.Config{Faults: devledger.FaultConfig{BadRequest: 1}}, ledger.Rejected, "30", false},
		"503 validator timed out": {devledger.Config{Faults: devledger.FaultConfig{Timeout: 1}, HangTimeout: 10 * time.Millisecond},
			ledger.Retry, "17", true},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			l := devledgertest.Start(t, tc.cfg)
			r := newClient(t, l.URL, 5*time.Second).Submit(t.Context(), build(t, sawtooth.BuildParams{Anchor: "2.QmCode"}).Bytes, "")
			require.Equal(t, tc.wantClass, r.Class, "%s", r)
			require.Equal(t, tc.wantCode, r.Code)
			require.Equal(t, tc.wantMaybe, r.MaybeProcessed)
			require.NotEmpty(t, r.Message)
		})
	}
}

func TestClientStatusesGetThenPost(t *testing.T) {
	t.Parallel()
	l := devledgertest.Start(t, devledger.Config{})
	c := newClient(t, l.URL, 5*time.Second)

	var ids []string
	for i := range sawtooth.StatusesGetLimit + 1 {
		b := build(t, sawtooth.BuildParams{Anchor: strings.Repeat("9", i+1) + ".QmGetPost"})
		require.Equal(t, ledger.Accepted, c.Submit(t.Context(), b.Bytes, "").Class)
		ids = append(ids, b.ID)
	}
	start := len(l.Requests())

	st, err := c.Statuses(t.Context(), ids[:sawtooth.StatusesGetLimit], "")
	require.NoError(t, err)
	require.Len(t, st, sawtooth.StatusesGetLimit)
	st, err = c.Statuses(t.Context(), ids, "")
	require.NoError(t, err)
	require.Len(t, st, sawtooth.StatusesGetLimit+1)

	reqs := l.Requests()[start:]
	require.Len(t, reqs, 2)
	require.Equal(t, http.MethodGet, reqs[0].Method)
	require.Equal(t, "id="+strings.Join(ids[:sawtooth.StatusesGetLimit], ","), reqs[0].Query)
	require.Equal(t, http.MethodPost, reqs[1].Method)
	require.Equal(t, "application/json", reqs[1].Header.Get("Content-Type"))
}

func TestClientStatusesMalformedIDsAreUnknown(t *testing.T) {
	t.Parallel()
	l := devledgertest.Start(t, devledger.Config{})
	c := newClient(t, l.URL, 5*time.Second)

	st, err := c.Statuses(t.Context(), []string{"abc", strings.Repeat("AB", 64)}, "")
	require.NoError(t, err)
	require.Equal(t, map[string]ledger.BatchStatus{
		"abc":                    {Status: ledger.StatusUnknown},
		strings.Repeat("AB", 64): {Status: ledger.StatusUnknown},
	}, st)
	require.Empty(t, l.Requests(), "ids the API would refuse are not sent")
}
