package splinter_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/devledger"
	"github.com/anchord/anchord/internal/devledger/devledgertest"
	"github.com/anchord/anchord/internal/ledger"
	"github.com/anchord/anchord/internal/ledger/sawtooth"
	"github.com/anchord/anchord/internal/ledger/splinter"
	"github.com/anchord/anchord/internal/ledgertest"
)

const serviceID = "AbCdE-01234::a000"

func newClient(tb testing.TB, cfg splinter.Config) *splinter.Client {
	tb.Helper()
	c, err := splinter.New(cfg)
	require.NoError(tb, err)
	tb.Cleanup(c.CloseIdleConnections)
	return c
}

func build(t *testing.T, anchor string) sawtooth.Batch {
	t.Helper()
	key, err := sawtooth.GenerateKey()
	require.NoError(t, err)
	s, err := sawtooth.NewSigner(key)
	require.NoError(t, err)
	b, err := sawtooth.NewBuilder(s, sawtooth.BuilderConfig{})
	require.NoError(t, err)
	batch, err := b.Build(sawtooth.BuildParams{Anchor: anchor})
	require.NoError(t, err)
	return batch
}

func TestClientConformance(t *testing.T) {
	t.Parallel()
	ledgertest.Exercise(t, ledgertest.Features{ServiceID: serviceID, StatusChunk: splinter.StatusesLimit},
		func(tb testing.TB, url string, timeout time.Duration) ledger.Client {
			return newClient(tb, splinter.Config{URL: url, Timeout: timeout})
		})
}

func TestParseServiceID(t *testing.T) {
	t.Parallel()

	for id, want := range map[string][2]string{
		"AbCdE-01234::a000": {"AbCdE-01234", "a000"},
		"c::s":              {"c", "s"},
		"":                  {},
		"circuit":           {},
		"::s":               {},
		"c::":               {},
		"c::s::t":           {},
		"c:s":               {},
	} {
		circuit, service, err := splinter.ParseServiceID(id)
		if want == ([2]string{}) {
			require.Error(t, err, id)
			continue
		}
		require.NoError(t, err, id)
		require.Equal(t, want, [2]string{circuit, service})
	}
}

func TestSubmitPathAndHeaders(t *testing.T) {
	t.Parallel()
	l := devledgertest.Start(t, devledger.Config{})
	c := newClient(t, splinter.Config{URL: l.URL, Authorization: "Bearer Cylinder:test"})

	batch := build(t, "1.QmSplinter")
	r := c.Submit(t.Context(), batch.Bytes, serviceID)
	require.Equal(t, ledger.Accepted, r.Class, "%s", r)
	_, err := c.Statuses(t.Context(), []string{batch.ID}, serviceID)
	require.NoError(t, err)

	reqs := l.Requests()
	require.Len(t, reqs, 2)
	require.Equal(t, http.MethodPost, reqs[0].Method)
	require.Equal(t, "/scabbard/AbCdE-01234/a000/batches", reqs[0].Path)
	require.Equal(t, "application/octet-stream", reqs[0].Header.Get("Content-Type"))
	require.Equal(t, http.MethodGet, reqs[1].Method)
	require.Equal(t, "/scabbard/AbCdE-01234/a000/batch_statuses", reqs[1].Path)
	require.Equal(t, "ids="+batch.ID, reqs[1].Query)
	for _, req := range reqs {
		require.Equal(t, "1", req.Header.Get("SplinterProtocolVersion"))
		require.Equal(t, "Bearer Cylinder:test", req.Header.Get("Authorization"))
	}
}

func TestBodylessTooManyRequestsIsRetry(t *testing.T) {
	t.Parallel()
	l := devledgertest.Start(t, devledger.Config{Faults: devledger.FaultConfig{TooManyRequests: 1}})
	c := newClient(t, splinter.Config{URL: l.URL})

	r := c.Submit(t.Context(), build(t, "2.QmBusy").Bytes, serviceID)
	require.Equal(t, ledger.Result{Class: ledger.Retry, HTTPStatus: 429, Message: "429 Too Many Requests"}, r)
}

func TestSplinterErrorBodies(t *testing.T) {
	t.Parallel()
	l := devledgertest.Start(t, devledger.Config{})
	c := newClient(t, splinter.Config{URL: l.URL})

	r := c.Submit(t.Context(), []byte("garbage"), serviceID)
	require.Equal(t, ledger.Result{Class: ledger.Rejected, HTTPStatus: 400, Code: "400",
		Message: "Invalid body: not a valid list of batches"}, r)
}

func TestValidIsPending(t *testing.T) {
	t.Parallel()
	l := devledgertest.Start(t, devledger.Config{})
	c := newClient(t, splinter.Config{URL: l.URL})

	batch := build(t, "3.QmValid")
	require.Equal(t, ledger.Accepted, c.Submit(t.Context(), batch.Bytes, serviceID).Class)
	l.Clock.Advance(6 * time.Second) // past half the commit delay: scabbard says Valid
	reqsBefore := len(l.Requests())
	st, err := c.Statuses(t.Context(), []string{batch.ID}, serviceID)
	require.NoError(t, err)
	require.Equal(t, ledger.BatchStatus{Status: ledger.StatusPending}, st[batch.ID])
	require.Len(t, l.Requests(), reqsBefore+1)
}

func TestServiceScopes(t *testing.T) {
	t.Parallel()
	l := devledgertest.Start(t, devledger.Config{})
	c := newClient(t, splinter.Config{URL: l.URL})

	batch := build(t, "4.QmScoped")
	require.Equal(t, ledger.Accepted, c.Submit(t.Context(), batch.Bytes, serviceID).Class)
	st, err := c.Statuses(t.Context(), []string{batch.ID}, "AbCdE-01234::b000")
	require.NoError(t, err)
	require.Equal(t, ledger.StatusUnknown, st[batch.ID].Status, "another service does not hold it")
}

func TestBadServiceID(t *testing.T) {
	t.Parallel()
	l := devledgertest.Start(t, devledger.Config{})
	c := newClient(t, splinter.Config{URL: l.URL})

	r := c.Submit(t.Context(), build(t, "5.QmNoService").Bytes, "no-separator")
	require.Equal(t, ledger.Rejected, r.Class)
	require.Zero(t, r.HTTPStatus)
	require.Contains(t, r.Message, "circuit")
	_, err := c.Statuses(t.Context(), []string{"x"}, "")
	require.Error(t, err)
	require.Empty(t, l.Requests())
}

func TestNewClient(t *testing.T) {
	t.Parallel()

	for _, url := range []string{"", "splinterd:8085", "ftp://x", "http://h/?a=b"} {
		_, err := splinter.New(splinter.Config{URL: url})
		require.Error(t, err, url)
	}
	_, err := splinter.New(splinter.Config{URL: "http://h", Timeout: -1})
	require.Error(t, err)
	cfg := splinter.Config{URL: "http://h", Authorization: "Bearer secret"}
	require.NotContains(t, cfg.LogValue().String(), "secret")
}
