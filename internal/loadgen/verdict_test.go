package loadgen

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/config"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/wallet"
)

func load(t *testing.T, args ...string) (Summary, string, error) {
	t.Helper()
	var out bytes.Buffer
	cfg, err := Load(args, func(string) (string, bool) { return "", false }, &out)
	require.NoError(t, err)
	sum, err := Run(context.Background(), cfg, &out)
	return sum, out.String(), err
}

func TestUnreachableTargetFailsBeforeLoading(t *testing.T) {
	t.Parallel()
	target := "http://" + anchordtest.FreeAddr(t) // nothing listens there
	_, _, err := load(t, "--target", target, "--duration", "1s")
	require.ErrorIs(t, err, ErrPreflight)
	require.ErrorContains(t, err, target+" does not answer")
}

func TestWrongDIDMethodFailsBeforeLoading(t *testing.T) {
	t.Parallel()
	target := startAnchord(t, func(c *config.Config) { c.DIDMethod = "ion" })
	sum, _, err := load(t, "--target", target, "--duration", "1s")
	require.ErrorIs(t, err, ErrPreflight)
	require.ErrorContains(t, err, `serves DID method "ion", this run signs for "sidetree": pass --did-method ion`)
	require.Zero(t, sum.Sent)
}

// TestNothingPublishedFails loads a server that accepts but never anchors within the run (a batch
// writer timeout of an hour): every followed operation times out, and the run fails saying so.
func TestNothingPublishedFails(t *testing.T) {
	t.Parallel()
	target := startAnchord(t, func(c *config.Config) { c.BatchWriterTimeout = time.Hour })
	sum, _, err := load(t, "--target", target, "--count", "4", "--concurrency", "2", "--sample-every", "1", "--resolve-timeout", "500ms")
	require.ErrorIs(t, err, ErrNothingResolved)
	require.ErrorContains(t, err, "all 4 followed operations timed out")
	require.Equal(t, 4, sum.Accepted)
}

// TestNothingAcceptedFails loads a target that refuses every operation and names the answers.
func TestNothingAcceptedFails(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/version" {
			_, _ = w.Write([]byte(`{"version":"x","protocol":{"didMethod":"sidetree"}}`))
			return
		}
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"code":"jws_failed_signature_validation","message":"no"}`))
	}))
	t.Cleanup(srv.Close)
	sum, _, err := load(t, "--target", srv.URL, "--count", "5", "--concurrency", "1")
	require.ErrorIs(t, err, ErrNothingAccepted)
	require.ErrorContains(t, err, "5 sent, answers by status:code: 400:jws_failed_signature_validation=5")
	require.Equal(t, 5, sum.Errors["400:jws_failed_signature_validation"])
}

// TestMixFallBackIsReported runs a mix of updates without a warm-up: no published DID is free
// at first, so picks become creates, and the summary says how many.
func TestMixFallBackIsReported(t *testing.T) {
	t.Parallel()
	target := startAnchord(t)
	sum, out, err := load(t, "--target", target, "--count", "20", "--concurrency", "2", "--mix", "create=1,update=99", "--warmup-dids", "0")
	require.NoError(t, err)
	require.Positive(t, sum.FellBack["update"])
	require.Contains(t, out, "mix fell back:")
	require.True(t, strings.Contains(out, "update="), out)
}

// TestNothingFoundFails resolves DIDs the target never saw: every GET answers 404, and the run
// fails naming the answers instead of reporting a GET/s of errors.
func TestNothingFoundFails(t *testing.T) {
	t.Parallel()
	target := startAnchord(t)
	_, suffix, err := wallet.CreateRequest(mustKey(t).Commitment(), mustKey(t).Commitment(), wallet.Replace(wallet.Document{}))
	require.NoError(t, err)
	dids := filepath.Join(t.TempDir(), "dids.txt")
	require.NoError(t, os.WriteFile(dids, []byte(suffix+"\n"), 0o600))
	sum, _, err := load(t, "--target", target, "--count", "3", "--concurrency", "1", "--mix", "resolve=1", "--resolve-dids", dids)
	require.ErrorIs(t, err, ErrNothingFound)
	require.ErrorContains(t, err, "3 GETs, answers by status:code: GET:404=3")
	require.Zero(t, sum.GETsOK)
}

func mustKey(t *testing.T) *wallet.Key {
	t.Helper()
	k, err := wallet.New(wallet.Config{Profile: sidetree.Profile{Method: MethodDefault}}).NewKey()
	require.NoError(t, err)
	return k
}

// TestUnansweredRequestsAreNotLatenciesAndFailTheRun: requests that got no answer (a target
// that died) count as errors, stay out of the latency percentiles (their fast refusals would
// pull p50 down), and fail the run naming the first reason.
func TestUnansweredRequestsAreNotLatenciesAndFailTheRun(t *testing.T) {
	t.Parallel()
	s := newStats()
	for range 10 {
		s.posted("create", time.Millisecond, "")
	}
	refused := errors.New("dial tcp 127.0.0.1:9: connect: connection refused")
	for range 20 {
		s.unanswered(false, refused)
	}
	s.got(3*time.Millisecond, 200)
	s.unanswered(true, refused)
	iv := s.cutInterval(time.Second, nil)
	sum := s.summary(time.Second)

	require.Equal(t, time.Millisecond, sum.POST[50], "p50 of the answered POSTs only")
	require.Equal(t, time.Millisecond, sum.POST[100])
	require.Equal(t, 30, sum.Sent)
	require.Equal(t, 10, sum.Accepted)
	require.Equal(t, 2, sum.GETs)
	require.Equal(t, 3*time.Millisecond, sum.GET[50])
	require.Equal(t, map[string]int{"transport": 20, "GET:none": 1}, sum.Errors)
	require.Equal(t, 21, sum.NoAnswer)
	require.Equal(t, time.Millisecond, iv.POST[50])
	require.Equal(t, 20, iv.Errors)
	require.Equal(t, 2, iv.GETs)

	err := sum.verdict(Config{})
	require.ErrorIs(t, err, ErrUnanswered)
	require.ErrorContains(t, err, "21 of 32")
	require.ErrorContains(t, err, "connection refused")
	var out bytes.Buffer
	sum.Write(&out)
	require.Contains(t, out.String(), "no answer:        21 requests")
}
