package devledger

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/ledger/sawtooth"
)

const testKey = "8f1a3c2e9b7d6f5e4c3b2a1908f7e6d5c4b3a29180f7e6d5c4b3a2918f7e6d5c"

type testBundle struct {
	srv     *Server
	url     string
	clock   *anchordtest.Clock
	reg     *prometheus.Registry
	builder *sawtooth.Builder
	http    *http.Client
}

// setup serves a devledger on a loopback port until the test ends. Unless cfg says otherwise,
// batches commit 10 s (of fake time) after acceptance.
func setup(t *testing.T, cfg Config) *testBundle {
	t.Helper()
	clock := anchordtest.NewClock()
	reg := prometheus.NewRegistry()
	cfg.NowFunc = clock.Now
	cfg.Registerer = reg
	cfg.Gatherer = reg
	cfg.Logger = anchordtest.Logger(t)
	if cfg.CommitDelay == 0 {
		cfg.CommitDelay = 10 * time.Second
	}
	srv, err := New(cfg)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()

	tr := &http.Transport{}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		cancel()
		require.NoError(t, anchordtest.WaitOrTimeout(t, done, 10*time.Second))
	})
	signer, err := sawtooth.NewSigner(testKey)
	require.NoError(t, err)
	builder, err := sawtooth.NewBuilder(signer, sawtooth.BuilderConfig{})
	require.NoError(t, err)
	return &testBundle{
		srv: srv, url: "http://" + ln.Addr().String(), clock: clock, reg: reg, builder: builder,
		http: &http.Client{Transport: tr},
	}
}

func (b *testBundle) build(t *testing.T, anchor string) sawtooth.Batch {
	t.Helper()
	batch, err := b.builder.Build(sawtooth.BuildParams{Anchor: anchor})
	require.NoError(t, err)
	return batch
}

// do sends a request and returns the status code and the decoded JSON body (nil if none).
func (b *testBundle) do(t *testing.T, method, path, contentType string, body []byte) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, b.url+path, bytes.NewReader(body))
	require.NoError(t, err)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := b.http.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if len(bytes.TrimSpace(raw)) == 0 {
		return resp.StatusCode, nil
	}
	var doc any
	require.NoError(t, json.Unmarshal(raw, &doc), "body: %s", raw)
	if m, ok := doc.(map[string]any); ok {
		return resp.StatusCode, m
	}
	return resp.StatusCode, map[string]any{"array": doc}
}

func (b *testBundle) submit(t *testing.T, batch []byte) (int, map[string]any) {
	t.Helper()
	return b.do(t, http.MethodPost, "/batches", "application/octet-stream", batch)
}

// status returns the Sawtooth status entry of one batch.
func (b *testBundle) status(t *testing.T, id string) map[string]any {
	t.Helper()
	code, doc := b.do(t, http.MethodGet, "/batch_statuses?id="+id, "", nil)
	require.Equal(t, http.StatusOK, code, "%v", doc)
	data := doc["data"].([]any)
	require.Len(t, data, 1)
	return data[0].(map[string]any)
}

func apiCode(t *testing.T, doc map[string]any) float64 {
	t.Helper()
	e, ok := doc["error"].(map[string]any)
	require.True(t, ok, "no Sawtooth error body: %v", doc)
	return e["code"].(float64)
}

func TestSubmitThenCommit(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})

	batch := b.build(t, "1.QmFirst")
	code, doc := b.submit(t, batch.Bytes)
	require.Equal(t, http.StatusAccepted, code)
	require.Equal(t, b.url+"/batch_statuses?id="+batch.ID, doc["link"])

	st := b.status(t, batch.ID)
	require.Equal(t, "PENDING", st["status"])
	require.Equal(t, batch.ID, st["id"])
	require.Empty(t, st["invalid_transactions"])

	b.clock.Advance(9 * time.Second)
	require.Equal(t, "PENDING", b.status(t, batch.ID)["status"])
	b.clock.Advance(time.Second)
	require.Equal(t, "COMMITTED", b.status(t, batch.ID)["status"])

	stats := b.srv.Stats()
	require.Equal(t, 1, stats.Submissions)
	require.Equal(t, 1, stats.Accepted)
	require.Equal(t, 1, stats.Committed)
	require.Zero(t, stats.Pending)
	require.Zero(t, stats.Duplicates)
}

func TestRunOnceCommitsDueBatches(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})

	for _, a := range []string{"1.QmA", "2.QmB", "bad anchor"} {
		code, _ := b.submit(t, b.build(t, a).Bytes)
		require.Equal(t, http.StatusAccepted, code)
	}
	require.Equal(t, commitResult{}, b.srv.runOnce())
	b.clock.Advance(10 * time.Second)
	require.Equal(t, commitResult{Committed: 2, Invalid: 1}, b.srv.runOnce())
	require.Equal(t, commitResult{}, b.srv.runOnce())
	require.InDelta(t, 2, testutil.ToFloat64(b.srv.metrics.committed), 0)
	require.InDelta(t, 1, testutil.ToFloat64(b.srv.metrics.invalid), 0)
	require.InDelta(t, 0, testutil.ToFloat64(b.srv.metrics.pending), 0)
}

func TestResubmissionIsIdempotent(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})

	batch := b.build(t, "3.QmAgain")
	for range 3 {
		code, _ := b.submit(t, batch.Bytes)
		require.Equal(t, http.StatusAccepted, code)
	}
	b.clock.Advance(10 * time.Second)
	require.Equal(t, "COMMITTED", b.status(t, batch.ID)["status"])
	code, _ := b.submit(t, batch.Bytes)
	require.Equal(t, http.StatusAccepted, code)
	b.clock.Advance(10 * time.Second)
	require.Equal(t, "COMMITTED", b.status(t, batch.ID)["status"])

	stats := b.srv.Stats()
	require.Equal(t, 4, stats.Submissions)
	require.Equal(t, 1, stats.Accepted, "a batch is recorded once")
	require.Equal(t, 3, stats.Duplicates)
	require.Equal(t, 1, stats.Committed, "and committed once")
	require.InDelta(t, 3, testutil.ToFloat64(b.srv.metrics.duplicates), 0)
}

func TestRefusesBadSubmissions(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})

	good := b.build(t, "4.QmGood")
	tampered := bytes.Clone(good.Bytes)
	tampered[len(tampered)-1] ^= 1 // last byte of the payload: payload_sha512 no longer matches

	for name, tc := range map[string]struct {
		contentType string
		body        []byte
		wantCode    float64
	}{
		"wrong content type": {"application/json", good.Bytes, 42},
		"no content type":    {"", good.Bytes, 42},
		"empty body":         {"application/octet-stream", nil, 34},
		"not a protobuf":     {"application/octet-stream", []byte{0x0a, 0x05, 0x01}, 35},
		"tampered payload":   {"application/octet-stream", tampered, 30},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			code, doc := b.do(t, http.MethodPost, "/batches", tc.contentType, tc.body)
			require.Equal(t, http.StatusBadRequest, code)
			require.InDelta(t, tc.wantCode, apiCode(t, doc), 0)
			require.NotEmpty(t, doc["error"].(map[string]any)["title"])
			require.NotEmpty(t, doc["error"].(map[string]any)["message"])
		})
	}
	t.Run("tampered batch is unknown", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, "UNKNOWN", b.status(t, good.ID)["status"])
	})
}

func TestProcessorFindsInvalidBatches(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})

	other, err := sawtooth.NewBuilder(mustSigner(t), sawtooth.BuilderConfig{FamilyName: "intkey"})
	require.NoError(t, err)
	wrongFamily, err := other.Build(sawtooth.BuildParams{Anchor: "9.QmFamily"})
	require.NoError(t, err)

	first := b.build(t, "5.QmTwice")
	second := b.build(t, "5.QmTwice") // same anchor, other nonce: another batch
	notAnchor := b.build(t, "no count here")
	for _, batch := range []sawtooth.Batch{first, second, notAnchor, wrongFamily} {
		code, _ := b.submit(t, batch.Bytes)
		require.Equal(t, http.StatusAccepted, code)
	}
	b.clock.Advance(10 * time.Second)

	require.Equal(t, "COMMITTED", b.status(t, first.ID)["status"])
	for batch, wantMsg := range map[*sawtooth.Batch]string{
		&second:      "already recorded",
		&notAnchor:   "not an anchor string",
		&wrongFamily: `no transaction processor for family "intkey"`,
	} {
		st := b.status(t, batch.ID)
		require.Equal(t, "INVALID", st["status"])
		txns := st["invalid_transactions"].([]any)
		require.Len(t, txns, 1)
		txn := txns[0].(map[string]any)
		require.Equal(t, batch.TransactionIDs[0], txn["id"])
		require.Contains(t, txn["message"], wantMsg)
	}
	stats := b.srv.Stats()
	require.Equal(t, 1, stats.Committed)
	require.Equal(t, 3, stats.Invalid)
}

func TestStatusQueries(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})

	var ids []string
	for _, a := range []string{"6.QmOne", "7.QmTwo"} {
		batch := b.build(t, a)
		code, _ := b.submit(t, batch.Bytes)
		require.Equal(t, http.StatusAccepted, code)
		ids = append(ids, batch.ID)
	}
	unknown := strings.Repeat("ab", 64)
	ids = append(ids, unknown)

	body, err := json.Marshal(ids)
	require.NoError(t, err)
	code, doc := b.do(t, http.MethodPost, "/batch_statuses", "application/json", body)
	require.Equal(t, http.StatusOK, code)
	require.NotContains(t, doc, "link", "POST answers carry no link")
	data := doc["data"].([]any)
	require.Len(t, data, 3)
	for i, want := range []string{"PENDING", "PENDING", "UNKNOWN"} {
		entry := data[i].(map[string]any)
		require.Equal(t, ids[i], entry["id"])
		require.Equal(t, want, entry["status"])
	}

	code, doc = b.do(t, http.MethodGet, "/batch_statuses?id="+strings.Join(ids, ","), "", nil)
	require.Equal(t, http.StatusOK, code)
	require.Len(t, doc["data"], 3)
	require.Contains(t, doc["link"], "/batch_statuses?id=")

	for name, tc := range map[string]struct {
		method, path, contentType, body string
		wantCode                        float64
	}{
		"post wrong content type": {http.MethodPost, "/batch_statuses", "text/plain", `["` + unknown + `"]`, 43},
		"post empty array":        {http.MethodPost, "/batch_statuses", "application/json", `[]`, 46},
		"post not an array":       {http.MethodPost, "/batch_statuses", "application/json", `{"id":1}`, 46},
		"post bad id":             {http.MethodPost, "/batch_statuses", "application/json", `["abc"]`, 60},
		"get no id":               {http.MethodGet, "/batch_statuses", "", "", 66},
		"get upper-case id":       {http.MethodGet, "/batch_statuses?id=" + strings.ToUpper(unknown), "", "", 60},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			code, doc := b.do(t, tc.method, tc.path, tc.contentType, []byte(tc.body))
			require.Equal(t, http.StatusBadRequest, code)
			require.InDelta(t, tc.wantCode, apiCode(t, doc), 0)
		})
	}
}

func TestStatsEndpointAndMetrics(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})

	batch := b.build(t, "8.QmStats")
	for range 2 {
		code, _ := b.submit(t, batch.Bytes)
		require.Equal(t, http.StatusAccepted, code)
	}
	code, doc := b.do(t, http.MethodGet, "/devledger/stats", "", nil)
	require.Equal(t, http.StatusOK, code)
	require.InDelta(t, 2, doc["submissions"], 0)
	require.InDelta(t, 1, doc["accepted"], 0)
	require.InDelta(t, 1, doc["duplicates"], 0)
	require.InDelta(t, 1, doc["pending"], 0)
	require.Len(t, doc["faults"], len(faultKinds))

	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, b.url+"/metrics", nil)
	require.NoError(t, err)
	resp, err := b.http.Do(req)
	require.NoError(t, err)
	text, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Contains(t, string(text), "anchord_devledger_batches_accepted_total 1")
	require.Contains(t, string(text), "anchord_devledger_batches_duplicate_total 1")
	require.Contains(t, string(text), `anchord_devledger_requests_total{code="202",route="batches"} 2`)
	require.Contains(t, string(text), `anchord_devledger_faults_total{kind="lost"} 0`)
}

func TestHungRequestAnswers503AfterHangTimeout(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Faults: FaultConfig{Timeout: 1}, HangTimeout: 50 * time.Millisecond})

	batch := b.build(t, "10.QmHang")
	code, doc := b.submit(t, batch.Bytes)
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.InDelta(t, 17, apiCode(t, doc), 0)
	require.Equal(t, "PENDING", b.status(t, batch.ID)["status"], "the hung batch was recorded")
	require.Equal(t, 1, b.srv.Stats().Faults["timeout"])
}

func TestShutdownReleasesHungRequests(t *testing.T) {
	t.Parallel()

	srv, err := New(Config{Faults: FaultConfig{Timeout: 1}, HangTimeout: time.Hour, Logger: anchordtest.Logger(t)})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()

	signer := mustSigner(t)
	builder, err := sawtooth.NewBuilder(signer, sawtooth.BuilderConfig{})
	require.NoError(t, err)
	batch, err := builder.Build(sawtooth.BuildParams{Anchor: "11.QmShutdown"})
	require.NoError(t, err)

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	answered := make(chan error, 1)
	go func() {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://"+ln.Addr().String()+"/batches", bytes.NewReader(batch.Bytes))
		if err != nil {
			answered <- err
			return
		}
		req.Header.Set("Content-Type", "application/octet-stream")
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err == nil {
			resp.Body.Close()
		}
		answered <- err
	}()
	anchordtest.Eventually(t, 5*time.Second, 5*time.Millisecond, func() bool {
		return srv.Stats().Faults["timeout"] == 1
	})
	cancel()
	require.NoError(t, anchordtest.WaitOrTimeout(t, done, 10*time.Second))
	anchordtest.WaitOrTimeout(t, answered, 10*time.Second)
}

func TestRunListensOnAddr(t *testing.T) {
	t.Parallel()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	srv, err := New(Config{Addr: addr, Logger: anchordtest.Logger(t)})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	anchordtest.Eventually(t, 5*time.Second, 10*time.Millisecond, func() bool {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/devledger/stats", nil)
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	cancel()
	require.NoError(t, anchordtest.WaitOrTimeout(t, done, 10*time.Second))

	// A taken address is an error from Run, not a panic.
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	srv2, err := New(Config{Addr: busy.Addr().String()})
	require.NoError(t, err)
	require.ErrorContains(t, srv2.Run(context.Background()), "listen")
}

func mustSigner(t *testing.T) *sawtooth.Signer {
	t.Helper()
	s, err := sawtooth.NewSigner(testKey)
	require.NoError(t, err)
	return s
}
