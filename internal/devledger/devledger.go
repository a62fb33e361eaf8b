package devledger

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/anchord/anchord/internal/ledger/sawtooth"
)

// Server is the development ledger. Build it with New, then either Run it (listen on
// Config.Addr) or Serve it on a listener of your own; Handler serves it inside another server.
type Server struct {
	cfg     Config
	logger  *slog.Logger
	metrics *metrics
	picker  faultPicker
	handler http.Handler

	mu       sync.Mutex
	chain    *chain
	attempts map[string]int // submissions so far, per BatchList (scope and batch ids)
	stats    Stats
}

// Stats are the server's counters, also served as JSON at GET /devledger/stats.
type Stats struct {
	// Submissions counts batch submission requests (both dialects), whatever their answer.
	Submissions int `json:"submissions"`
	// Accepted counts distinct batches recorded. A batch is never recorded twice, so a test can
	// check Accepted against the distinct ids it had accepted.
	Accepted int `json:"accepted"`
	// Duplicates counts batches submitted again after they were recorded.
	Duplicates int `json:"duplicates"`
	Committed  int `json:"committed"`
	Invalid    int `json:"invalid"`
	// Pending counts recorded batches not yet committed or found invalid.
	Pending int `json:"pending"`
	// Rejected counts submissions refused because the BatchList was malformed or badly signed
	// (not injected faults).
	Rejected int `json:"rejected"`
	// Faults counts injected faults by kind (see FaultConfig).
	Faults map[string]int `json:"faults"`
}

// New returns a Server for cfg, or an error if cfg is invalid.
func New(cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("new devledger: %w", err)
	}
	reg := cfg.Registerer
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("new devledger: %w", err)
	}
	s := &Server{
		cfg:      cfg,
		logger:   cfg.Logger.With("component", "devledger"),
		metrics:  m,
		picker:   newFaultPicker(cfg.Faults),
		chain:    newChain(cfg.FamilyName, cfg.FamilyVersion, cfg.CommitDelay),
		attempts: make(map[string]int),
		stats:    Stats{Faults: make(map[string]int, len(faultKinds))},
	}
	for _, k := range faultKinds {
		s.stats.Faults[k] = 0
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /batches", s.instrument("batches", s.handleSawtoothSubmit))
	mux.HandleFunc("GET /batch_statuses", s.instrument("batch_statuses", s.handleSawtoothStatuses))
	mux.HandleFunc("POST /batch_statuses", s.instrument("batch_statuses", s.handleSawtoothStatuses))
	mux.HandleFunc("POST /scabbard/{circuit}/{service}/batches", s.instrument("scabbard_batches", s.handleScabbardSubmit))
	mux.HandleFunc("GET /scabbard/{circuit}/{service}/batch_statuses", s.instrument("scabbard_batch_statuses", s.handleScabbardStatuses))
	mux.HandleFunc("GET /devledger/stats", s.instrument("stats", s.handleStats))
	if cfg.Gatherer != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(cfg.Gatherer, promhttp.HandlerOpts{}))
	}
	s.handler = mux
	return s, nil
}

// Handler returns the server's HTTP handler.
func (s *Server) Handler() http.Handler { return s.handler }

// Run listens on Config.Addr and serves until ctx is done; see Serve.
func (s *Server) Run(ctx context.Context) error {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("devledger: listen: %w", err)
	}
	return s.Serve(ctx, ln)
}

// Serve serves on ln and commits due batches every CommitInterval until ctx is done, then
// shuts the HTTP server down gracefully (requests hung by the timeout fault are released at
// once) and returns nil. It closes ln.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		// Request contexts derive from ctx, so that hung requests end when Serve is told to.
		BaseContext: func(net.Listener) context.Context { return ctx },
		ErrorLog:    slog.NewLogLogger(s.logger.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	s.logger.InfoContext(ctx, "devledger listening", "addr", ln.Addr().String(), "config", s.cfg)

	tick := time.NewTicker(s.cfg.CommitInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
			defer cancel()
			shutdownErr := srv.Shutdown(sctx)
			if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("devledger: serve: %w", err)
			}
			if shutdownErr != nil {
				return fmt.Errorf("devledger: shutdown: %w", shutdownErr)
			}
			s.logger.InfoContext(ctx, "devledger stopped")
			return nil
		case err := <-errc:
			return fmt.Errorf("devledger: serve: %w", err)
		case <-tick.C:
			s.runOnce()
		}
	}
}

// commitResult is what one runOnce settled.
type commitResult struct {
	Committed int
	Invalid   int
}

// runOnce commits the batches that are due.
func (s *Server) runOnce() commitResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.commitDueLocked()
}

func (s *Server) commitDueLocked() commitResult {
	committed, invalid := s.chain.commitDue(s.cfg.NowFunc())
	s.stats.Committed += committed
	s.stats.Invalid += invalid
	s.stats.Pending = len(s.chain.queue)
	s.metrics.committed.Add(float64(committed))
	s.metrics.invalid.Add(float64(invalid))
	s.metrics.pending.Set(float64(s.stats.Pending))
	return commitResult{Committed: committed, Invalid: invalid}
}

// Stats returns the counters after committing the batches that are due.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.commitDueLocked()
	st := s.stats
	st.Faults = make(map[string]int, len(s.stats.Faults))
	for k, v := range s.stats.Faults {
		st.Faults[k] = v
	}
	return st
}

// submission is the verdict on one batch submission, before the dialect writes the answer.
type submission struct {
	// rejectErr is set when the BatchList is malformed or badly signed.
	rejectErr error
	fault     fault
	ids       []string
}

// submit parses and verifies a BatchList, draws its fault and records its batches (unless the
// fault says otherwise).
func (s *Server) submit(scope string, body []byte) submission {
	list, err := sawtooth.ParseBatchList(body)
	var verified []sawtooth.VerifiedBatch
	if err == nil {
		for _, b := range list.GetBatches() {
			vb, verr := sawtooth.VerifyBatch(b)
			if verr != nil {
				err = verr
				break
			}
			verified = append(verified, vb)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.Submissions++
	if err != nil {
		s.stats.Rejected++
		s.metrics.rejected.Inc()
		return submission{rejectErr: err}
	}
	ids := make([]string, len(verified))
	for i, vb := range verified {
		ids[i] = vb.ID
	}
	key := scope + "|" + strings.Join(ids, ",")
	f := s.picker.pick(key, s.attempts[key])
	s.attempts[key]++
	if f != faultNone {
		s.stats.Faults[f.String()]++
		s.metrics.faults.WithLabelValues(f.String()).Inc()
	}
	switch f {
	case faultNone, faultTimeout, faultInvalid:
		s.commitDueLocked()
		added, dups := s.chain.accept(scope, verified, s.cfg.NowFunc(), f == faultInvalid)
		s.stats.Accepted += added
		s.stats.Duplicates += dups
		s.stats.Pending = len(s.chain.queue)
		s.metrics.accepted.Add(float64(added))
		s.metrics.duplicates.Add(float64(dups))
		s.metrics.pending.Set(float64(s.stats.Pending))
	}
	return submission{fault: f, ids: ids}
}

// hang holds a request of the timeout fault until the client gives up, the server stops, or
// HangTimeout passes; it reports whether the request is still there to be answered.
func (s *Server) hang(r *http.Request) bool {
	t := time.NewTimer(s.cfg.HangTimeout)
	defer t.Stop()
	select {
	case <-r.Context().Done():
		return false
	case <-t.C:
		return true
	}
}

func (s *Server) handleStats(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.Stats())
}

// instrument counts requests by route and answered status code.
func (s *Server) instrument(route string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w}
		h(rec, r)
		code := "none" // the handler wrote nothing: the client went away during a hang
		if rec.status != 0 {
			code = fmt.Sprint(rec.status)
		}
		s.metrics.requests.WithLabelValues(route, code).Inc()
	}
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}
