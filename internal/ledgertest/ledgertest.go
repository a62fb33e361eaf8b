// Package ledgertest is the conformance suite of the ledger.Client contract. Every
// implementation runs Exercise against a devledger, which stands in for the ledger and injects
// the answers to classify. Dialect details (Sawtooth's GET/POST switch, scabbard's bodyless 429
// and status names) are tested by each implementation's own tests.
//
// It lives beside the ledger package, not under it: the suite needs a running stand-in ledger
// (devledger), which itself builds on the Sawtooth implementation, and a package under ledger/
// must not depend on one of its siblings through a package outside ledger/.
package ledgertest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/devledger"
	"github.com/anchord/anchord/internal/devledger/devledgertest"
	"github.com/anchord/anchord/internal/ledger"
	"github.com/anchord/anchord/internal/ledger/sawtooth"
)

// Features describes the implementation under test.
type Features struct {
	// ServiceID is passed to every call ("" for Sawtooth, "circuit::service" for Splinter).
	ServiceID string
	// StatusChunk is the most ids the client asks for in one request; the suite asks for more
	// than twice as many at once.
	StatusChunk int
}

// NewClientFunc builds the client under test for a ledger at baseURL with a per-request
// timeout.
type NewClientFunc func(tb testing.TB, baseURL string, timeout time.Duration) ledger.Client

// clientTimeout is the per-request timeout of clients the suite builds.
const clientTimeout = 5 * time.Second

type bundle struct {
	ledger  *devledgertest.Ledger
	client  ledger.Client
	builder *sawtooth.Builder
	f       Features
}

func setup(t *testing.T, f Features, newClient NewClientFunc, cfg devledger.Config, timeout time.Duration) *bundle {
	t.Helper()
	l := devledgertest.Start(t, cfg)
	key, err := sawtooth.GenerateKey()
	require.NoError(t, err)
	signer, err := sawtooth.NewSigner(key)
	require.NoError(t, err)
	builder, err := sawtooth.NewBuilder(signer, sawtooth.BuilderConfig{})
	require.NoError(t, err)
	return &bundle{ledger: l, client: newClient(t, l.URL, timeout), builder: builder, f: f}
}

func (b *bundle) build(t *testing.T, anchor string) sawtooth.Batch {
	t.Helper()
	batch, err := b.builder.Build(sawtooth.BuildParams{Anchor: anchor})
	require.NoError(t, err)
	return batch
}

func (b *bundle) submit(t *testing.T, batch []byte) ledger.Result {
	t.Helper()
	return b.client.Submit(t.Context(), batch, b.f.ServiceID)
}

func (b *bundle) statuses(t *testing.T, ids ...string) map[string]ledger.BatchStatus {
	t.Helper()
	st, err := b.client.Statuses(t.Context(), ids, b.f.ServiceID)
	require.NoError(t, err)
	return st
}

// Exercise runs the conformance scenarios.
func Exercise(t *testing.T, f Features, newClient NewClientFunc) {
	t.Helper()

	t.Run("AcceptedThenCommittedOrInvalid", func(t *testing.T) {
		t.Parallel()
		b := setup(t, f, newClient, devledger.Config{}, clientTimeout)
		good, bad, never := b.build(t, "1.QmGood"), b.build(t, "not an anchor"), b.build(t, "2.QmNeverSent")

		for _, batch := range []sawtooth.Batch{good, bad} {
			r := b.submit(t, batch.Bytes)
			require.Equal(t, ledger.Accepted, r.Class, "%s", r)
			require.Equal(t, 202, r.HTTPStatus)
			require.Empty(t, r.Message)
			require.NoError(t, r.Err)
		}
		require.Equal(t, map[string]ledger.BatchStatus{
			good.ID:  {Status: ledger.StatusPending},
			bad.ID:   {Status: ledger.StatusPending},
			never.ID: {Status: ledger.StatusUnknown},
		}, b.statuses(t, good.ID, bad.ID, never.ID))

		b.ledger.Clock.Advance(10 * time.Second)
		st := b.statuses(t, good.ID, bad.ID, never.ID)
		require.Equal(t, ledger.BatchStatus{Status: ledger.StatusCommitted}, st[good.ID])
		require.Equal(t, ledger.StatusInvalid, st[bad.ID].Status)
		require.Contains(t, st[bad.ID].Message, "not an anchor string")
		require.Equal(t, ledger.BatchStatus{Status: ledger.StatusUnknown}, st[never.ID])
	})

	t.Run("ResubmissionKeepsOneBatch", func(t *testing.T) {
		t.Parallel()
		b := setup(t, f, newClient, devledger.Config{}, clientTimeout)
		batch := b.build(t, "3.QmTwice")
		for range 3 {
			require.Equal(t, ledger.Accepted, b.submit(t, batch.Bytes).Class)
		}
		b.ledger.Clock.Advance(10 * time.Second)
		require.Equal(t, ledger.StatusCommitted, b.statuses(t, batch.ID)[batch.ID].Status)
		stats := b.ledger.Stats()
		require.Equal(t, 1, stats.Accepted)
		require.Equal(t, 2, stats.Duplicates)
		require.Equal(t, 1, stats.Committed)
	})

	for name, tc := range map[string]struct {
		faults     devledger.FaultConfig
		wantClass  ledger.Class
		wantStatus int
	}{
		"TooManyRequestsIsRetry": {devledger.FaultConfig{TooManyRequests: 1}, ledger.Retry, 429},
		"UnavailableIsRetry":     {devledger.FaultConfig{Unavailable: 1}, ledger.Retry, 503},
		"BadRequestIsRejected":   {devledger.FaultConfig{BadRequest: 1}, ledger.Rejected, 400},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, f, newClient, devledger.Config{Faults: tc.faults}, clientTimeout)
			batch := b.build(t, "4.QmFault")
			r := b.submit(t, batch.Bytes)
			require.Equal(t, tc.wantClass, r.Class, "%s", r)
			require.Equal(t, tc.wantStatus, r.HTTPStatus)
			require.NotEmpty(t, r.Message)
			require.False(t, r.MaybeProcessed)
			require.NoError(t, r.Err)
			require.Equal(t, ledger.StatusUnknown, b.statuses(t, batch.ID)[batch.ID].Status)
		})
	}

	t.Run("MalformedIsRejected", func(t *testing.T) {
		t.Parallel()
		b := setup(t, f, newClient, devledger.Config{}, clientTimeout)
		batch := b.build(t, "5.QmTampered")
		tampered := append([]byte(nil), batch.Bytes...)
		tampered[len(tampered)-1] ^= 1
		for _, body := range [][]byte{tampered, []byte("not a batch list")} {
			r := b.submit(t, body)
			require.Equal(t, ledger.Rejected, r.Class, "%s", r)
			require.Equal(t, 400, r.HTTPStatus)
			require.NotEmpty(t, r.Message)
		}
		require.Equal(t, 2, b.ledger.Stats().Rejected)
	})

	t.Run("TimeoutIsRetryMaybeProcessed", func(t *testing.T) {
		t.Parallel()
		const timeout = 150 * time.Millisecond
		b := setup(t, f, newClient, devledger.Config{Faults: devledger.FaultConfig{Timeout: 1}, HangTimeout: time.Hour}, timeout)
		batch := b.build(t, "6.QmHang")
		start := time.Now()
		r := b.submit(t, batch.Bytes)
		require.Less(t, time.Since(start), 10*timeout, "the client gave up on time")
		require.Equal(t, ledger.Retry, r.Class, "%s", r)
		require.Zero(t, r.HTTPStatus)
		require.Equal(t, "timeout after "+timeout.String(), r.Message)
		require.True(t, r.MaybeProcessed)
		require.Error(t, r.Err)
		// The ledger took it although the client could not know: statuses tell.
		require.Equal(t, ledger.StatusPending, b.statuses(t, batch.ID)[batch.ID].Status)
	})

	t.Run("LostBatchStaysUnknown", func(t *testing.T) {
		t.Parallel()
		b := setup(t, f, newClient, devledger.Config{Faults: devledger.FaultConfig{Lost: 1}}, clientTimeout)
		batch := b.build(t, "7.QmLost")
		require.Equal(t, ledger.Accepted, b.submit(t, batch.Bytes).Class)
		b.ledger.Clock.Advance(time.Minute)
		require.Equal(t, ledger.StatusUnknown, b.statuses(t, batch.ID)[batch.ID].Status)
	})

	t.Run("InvalidFaultReportsMessage", func(t *testing.T) {
		t.Parallel()
		b := setup(t, f, newClient, devledger.Config{Faults: devledger.FaultConfig{Invalid: 1}}, clientTimeout)
		batch := b.build(t, "8.QmRefused")
		require.Equal(t, ledger.Accepted, b.submit(t, batch.Bytes).Class)
		b.ledger.Clock.Advance(10 * time.Second)
		st := b.statuses(t, batch.ID)[batch.ID]
		require.Equal(t, ledger.StatusInvalid, st.Status)
		require.Contains(t, st.Message, "injected fault")
	})

	t.Run("WrongPathIsRejected404", func(t *testing.T) {
		t.Parallel()
		b := setup(t, f, newClient, devledger.Config{}, clientTimeout)
		c := newClient(t, b.ledger.URL+"/no/such/prefix", clientTimeout)
		batch := b.build(t, "9.QmNowhere")
		r := c.Submit(t.Context(), batch.Bytes, f.ServiceID)
		require.Equal(t, ledger.Rejected, r.Class, "%s", r)
		require.Equal(t, 404, r.HTTPStatus)
		require.NotEmpty(t, r.Message)

		_, err := c.Statuses(t.Context(), []string{batch.ID}, f.ServiceID)
		var he *ledger.HTTPError
		require.True(t, errors.As(err, &he), "%v", err)
		require.Equal(t, 404, he.StatusCode)
	})

	t.Run("ConnectionRefusedIsRetryNotProcessed", func(t *testing.T) {
		t.Parallel()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		url := "http://" + ln.Addr().String()
		require.NoError(t, ln.Close())
		b := setup(t, f, newClient, devledger.Config{}, clientTimeout)
		c := newClient(t, url, clientTimeout)
		batch := b.build(t, "10.QmClosed")
		r := c.Submit(t.Context(), batch.Bytes, f.ServiceID)
		require.Equal(t, ledger.Retry, r.Class, "%s", r)
		require.Zero(t, r.HTTPStatus)
		require.False(t, r.MaybeProcessed)
		require.Error(t, r.Err)

		_, err = c.Statuses(t.Context(), []string{batch.ID}, f.ServiceID)
		require.Error(t, err)
	})

	t.Run("CancelledContextIsRetry", func(t *testing.T) {
		t.Parallel()
		b := setup(t, f, newClient, devledger.Config{}, clientTimeout)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		r := b.client.Submit(ctx, b.build(t, "11.QmCancelled").Bytes, f.ServiceID)
		require.Equal(t, ledger.Retry, r.Class)
		require.Contains(t, r.Message, "request abandoned")
		require.ErrorIs(t, r.Err, context.Canceled)
	})

	t.Run("ManyStatusesInGroups", func(t *testing.T) {
		t.Parallel()
		b := setup(t, f, newClient, devledger.Config{}, clientTimeout)
		n := 2*f.StatusChunk + 7
		ids := make([]string, 0, n+2)
		for i := range n {
			batch := b.build(t, fmt.Sprintf("%d.QmMany", 100+i))
			require.Equal(t, ledger.Accepted, b.submit(t, batch.Bytes).Class)
			ids = append(ids, batch.ID)
		}
		ids = append(ids, ids[0], ids[1]) // repeats are answered once
		before := len(b.ledger.Requests())
		st := b.statuses(t, ids...)
		require.Len(t, st, n)
		for _, id := range ids {
			require.Equal(t, ledger.StatusPending, st[id].Status)
		}
		require.GreaterOrEqual(t, len(b.ledger.Requests())-before, 3, "more ids than one request takes")

		b.ledger.Clock.Advance(10 * time.Second)
		for id, s := range b.statuses(t, ids...) {
			require.Equal(t, ledger.StatusCommitted, s.Status, id)
		}
	})

	t.Run("NoIDsNoRequest", func(t *testing.T) {
		t.Parallel()
		b := setup(t, f, newClient, devledger.Config{}, clientTimeout)
		st := b.statuses(t)
		require.Empty(t, st)
		require.Empty(t, b.ledger.Requests())
	})
}
