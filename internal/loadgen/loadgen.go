package loadgen

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/wallet"
)

// A measured operation's DID is resolved every followPoll, so its accept→resolvable latency is
// known to that precision. Other followed operations are followed only to learn when their DID may
// be used again; they poll less often, so that polling does not become the load being measured.
const (
	followPoll      = 100 * time.Millisecond
	followPollQuiet = 500 * time.Millisecond
)

// runner holds one run's state.
type runner struct {
	cfg     Config
	targets []string
	next    atomic.Uint64 // round-robin over targets
	mix     mix
	client  *http.Client // the pre-flight's and the followers' requests
	wire    *wire        // the measured requests
	wallet  *wallet.Wallet
	keys    []*wallet.Key
	stats   *stats
	seq     atomic.Int64 // makes every create's document distinct
	picks   atomic.Int64 // counts creates for sampling

	poolMu sync.Mutex
	pool   []*wallet.Identity // published DIDs with nothing pending
	dids   []string           // suffixes from --resolve-dids

	acceptedMu sync.Mutex
	accepted   *bufio.Writer

	follows sync.WaitGroup
}

// Run performs a load run and writes progress and the summary to out.
func Run(ctx context.Context, cfg Config, out io.Writer) (Summary, error) {
	m, err := parseMix(cfg.Mix)
	if err != nil {
		return Summary{}, err
	}
	r := &runner{
		cfg: cfg, targets: cfg.Targets(), mix: m, stats: newStats(),
		wallet: wallet.New(wallet.Config{Profile: sidetree.Profile{Method: cfg.Method}}),
		client: &http.Client{
			Timeout:   30 * time.Second,
			Transport: &http.Transport{MaxIdleConns: 4 * cfg.Concurrency, MaxIdleConnsPerHost: 4 * cfg.Concurrency, IdleConnTimeout: time.Minute},
		},
	}
	defer r.client.CloseIdleConnections()
	if r.wire, err = newWire(r.targets, 4*cfg.Concurrency, 30*time.Second); err != nil {
		return Summary{}, err
	}
	defer r.wire.close()
	if err := r.preflight(ctx, out); err != nil {
		return Summary{}, err
	}
	for range cfg.KeyPool {
		k, err := r.wallet.NewKey()
		if err != nil {
			return Summary{}, err
		}
		r.keys = append(r.keys, k)
	}
	if cfg.AcceptedOut != "" {
		f, err := os.Create(cfg.AcceptedOut)
		if err != nil {
			return Summary{}, fmt.Errorf("--accepted-out: %w", err)
		}
		defer f.Close()
		r.accepted = bufio.NewWriter(f)
		defer r.accepted.Flush()
	}

	if cfg.ResolveDIDs != "" && m.has("resolve") {
		if r.dids, err = readDIDs(cfg.ResolveDIDs); err != nil {
			return Summary{}, err
		}
		fmt.Fprintf(out, "resolve: %d DIDs from %s\n", len(r.dids), cfg.ResolveDIDs)
	}

	warmupAccepted := 0
	if m.needsPublished(len(r.dids) > 0) && cfg.WarmupDIDs > 0 {
		fmt.Fprintf(out, "warm-up: creating %d DIDs and waiting until they resolve\n", cfg.WarmupDIDs)
		if err := r.warmup(ctx); err != nil {
			return Summary{}, err
		}
		warmupAccepted = r.stats.summary(0).Accepted
		r.stats = newStats() // the warm-up is not part of the measurement
	}

	fmt.Fprintf(out, "load: %s, mix %s, concurrency %d, rate %s, duration %s, count %d\n",
		cfg.Target, cfg.Mix, cfg.Concurrency, rateString(cfg.Rate), cfg.Duration, cfg.Count)
	// The first sample reads every target's /metrics, which a busy server may take seconds to
	// answer: the timed phase starts after it, or it would eat into --duration.
	meter := newUsageMeter(r.client, r.targets)
	first := meter.sample(ctx)
	runCtx := ctx
	if cfg.Duration > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, cfg.Duration)
		defer cancel()
	}
	last := first
	cut := func(elapsed time.Duration) {
		now := meter.sample(ctx)
		u := usageBetween(last, now)
		last = now
		fmt.Fprintln(out, r.stats.cutInterval(elapsed, &u).Line())
	}
	start := time.Now()
	tokens := r.tokens(runCtx)
	var workers sync.WaitGroup
	for range cfg.Concurrency {
		workers.Go(func() {
			for range tokens {
				r.one(ctx)
			}
		})
	}
	ticker := time.NewTicker(time.Second)
	var intervals <-chan time.Time // nil, never ready, without --interval
	if cfg.Interval > 0 {
		t := time.NewTicker(cfg.Interval)
		defer t.Stop()
		intervals = t.C
	}
	lastAccepted := 0
	done := make(chan struct{})
	go func() { workers.Wait(); close(done) }()
loop:
	for {
		select {
		case <-ticker.C:
			r.stats.progress(out, time.Since(start), &lastAccepted)
		case tick := <-intervals:
			// The interval ends when its tick was due, not when this loop got to it: on a busy
			// machine the loop may run late, and the last, partial interval would then be too short
			// to print (and every line's length would drift from --interval).
			cut(tick.Sub(start))
		case <-done:
			break loop
		}
	}
	ticker.Stop()
	elapsed := time.Since(start)
	// The last, partial interval is printed when it lasted a second or more: a shorter rest
	// (the timed phase ending just after a tick) would rate a handful of requests per second.
	if cfg.Interval > 0 && r.stats.intervalPending(elapsed, time.Second) {
		cut(elapsed)
	}
	usage := usageBetween(first, meter.sample(ctx))
	fmt.Fprintf(out, "sending done after %s; waiting for followed operations to resolve\n", elapsed.Round(time.Millisecond))
	r.follows.Wait()
	s := r.stats.summary(elapsed)
	s.WarmupAccepted = warmupAccepted
	s.Usage = usage
	s.Write(out)
	if cfg.Report != "" {
		if err := writeReportFile(cfg.Report, cfg, s); err != nil {
			return s, err
		}
		fmt.Fprintf(out, "report: %s\n", cfg.Report)
	}
	return s, s.verdict(cfg)
}

func rateString(r float64) string {
	if r <= 0 {
		return "unbounded"
	}
	return strconv.FormatFloat(r, 'f', -1, 64) + "/s"
}

// tokens yields one token per operation to send: at the configured rate, or as fast as workers
// take them; it stops at Count or when ctx ends.
func (r *runner) tokens(ctx context.Context) <-chan struct{} {
	ch := make(chan struct{}, r.cfg.Concurrency)
	go func() {
		defer close(ch)
		sent := 0
		var interval time.Duration
		if r.cfg.Rate > 0 {
			interval = time.Duration(float64(time.Second) / r.cfg.Rate)
		}
		next := time.Now()
		for r.cfg.Count <= 0 || sent < r.cfg.Count {
			if interval > 0 {
				if d := time.Until(next); d > 0 {
					t := time.NewTimer(d)
					select {
					case <-ctx.Done():
						t.Stop()
						return
					case <-t.C:
					}
				}
				next = next.Add(interval)
			}
			select {
			case <-ctx.Done():
				return
			case ch <- struct{}{}:
				sent++
			}
		}
	}()
	return ch
}

// one sends one operation of a kind drawn from the mix.
func (r *runner) one(ctx context.Context) {
	kind := r.mix.pick(rand.IntN(r.mix.total))
	if kind == "resolve" {
		if suffix := r.pickDID(); suffix != "" {
			r.get(ctx, suffix)
			return
		}
	}
	var id *wallet.Identity
	if kind != "create" {
		if id = r.take(); id == nil {
			r.stats.fallBack(kind)
			kind = "create" // no published DID is free yet
		}
	}
	measure := r.picks.Add(1)%int64(r.cfg.SampleEvery) == 0
	if kind == "create" {
		r.create(ctx, measure, measure)
		return
	}
	r.change(ctx, kind, id, measure)
}

// create sends one create; when follow is set its DID joins the pool of published DIDs once it
// resolves, and measure records how long that took.
func (r *runner) create(ctx context.Context, follow, measure bool) *wallet.Identity {
	n := r.seq.Add(1)
	// Two distinct keys: a create whose update and recovery commitments are equal is refused.
	i := rand.IntN(len(r.keys))
	j := (i + 1 + rand.IntN(len(r.keys)-1)) % len(r.keys)
	upd, rec := r.keys[i], r.keys[j]
	doc := wallet.Document{
		PublicKeys: []wallet.PublicKey{wallet.DocumentKey("key-1", upd, "authentication")},
		Services:   []wallet.Service{{ID: "home", Type: "LinkedDomains", Endpoint: "https://example.com/" + strconv.FormatInt(n, 36)}},
	}
	req, suffix, err := wallet.CreateRequest(rec.Commitment(), upd.Commitment(), wallet.Replace(doc))
	if err != nil {
		r.stats.posted("create", 0, "generate")
		return nil
	}
	id := &wallet.Identity{Suffix: suffix, UpdateKey: upd, RecoveryKey: rec}
	if !r.post(ctx, "create", suffix, "-", req) {
		return nil
	}
	if follow {
		r.follow(ctx, suffix, func(code int, md metadata) bool { return code == http.StatusOK && md.Method.Published }, id, measure)
	}
	return id
}

// change sends an update, recover or deactivate for a published DID, and follows it until it
// shows, so the DID can be used again.
func (r *runner) change(ctx context.Context, kind string, id *wallet.Identity, measure bool) {
	next := *id // the wallet advances the identity; keep the old one if the request fails
	var req []byte
	var err error
	var reveal string
	switch kind {
	case "update":
		reveal = id.UpdateKey.RevealValue()
		req, err = r.wallet.Update(&next, wallet.AddServices(wallet.Service{ID: "home", Type: "LinkedDomains", Endpoint: "https://example.org/" + strconv.FormatInt(r.seq.Add(1), 36)}))
	case "recover":
		reveal = id.RecoveryKey.RevealValue()
		req, err = r.wallet.Recover(&next, wallet.Replace(wallet.Document{PublicKeys: []wallet.PublicKey{wallet.DocumentKey("key-1", next.UpdateKey, "authentication")}}))
	case "deactivate":
		reveal = id.RecoveryKey.RevealValue()
		req, err = r.wallet.Deactivate(&next)
	}
	if err != nil {
		r.stats.posted(kind, 0, "generate")
		r.give(id)
		return
	}
	if !r.post(ctx, kind, id.Suffix, reveal, req) {
		r.give(id)
		return
	}
	var done func(int, metadata) bool
	switch kind {
	case "update":
		want := next.UpdateKey.Commitment()
		done = func(code int, md metadata) bool { return code == http.StatusOK && md.Method.UpdateCommitment == want }
	case "recover":
		want := next.RecoveryKey.Commitment()
		done = func(code int, md metadata) bool { return code == http.StatusOK && md.Method.RecoveryCommitment == want }
	case "deactivate":
		done = func(code int, _ metadata) bool { return code == http.StatusGone }
		r.follow(ctx, id.Suffix, done, nil, measure)
		return
	}
	r.follow(ctx, id.Suffix, done, &next, measure)
}

// target returns the next target in turn.
func (r *runner) target() string {
	return r.targets[r.turn()]
}

// turn returns the index of the next target in turn.
func (r *runner) turn() int {
	return int(r.next.Add(1)-1) % len(r.targets)
}

// post sends one operation and records the outcome; it reports whether it was accepted. With
// several targets, a request that gets no answer or a 503 is sent again to the next one, as a
// load balancer would: the same operation twice is still one operation to anchord.
func (r *runner) post(ctx context.Context, kind, suffix, reveal string, body []byte) bool {
	start := time.Now()
	var status int
	var respBody []byte
	var err error
	// Each try goes to another target: the turn is shared by every worker, so taking the next
	// turn could meet the same dead target again.
	first := r.turn()
	for try := 0; try < len(r.targets); try++ {
		target := r.targets[(first+try)%len(r.targets)]
		status, respBody, err = r.wire.do(ctx, target, http.MethodPost, "/sidetree/v1/operations", "application/json", body, true)
		if err == nil && status == http.StatusServiceUnavailable && try+1 < len(r.targets) {
			continue
		}
		if err == nil || ctx.Err() != nil {
			break
		}
	}
	lat := time.Since(start)
	if err != nil {
		if ctx.Err() == nil {
			// A request the run itself cut short (Ctrl-C) is not the target's failure.
			r.stats.unanswered(false, err)
		}
		return false
	}
	if status != http.StatusOK {
		r.stats.posted(kind, lat, errorCode(status, respBody))
		return false
	}
	r.stats.posted(kind, lat, "")
	if r.accepted != nil {
		r.acceptedMu.Lock()
		fmt.Fprintf(r.accepted, "%s %s %s\n", kind, suffix, reveal)
		r.acceptedMu.Unlock()
	}
	return true
}

// errorTextMax bounds what errorCode keeps of a text answer: enough for Orb's fixed wordings
// ("bad request: missing signing key"), not the rest of a message that may quote the request.
const errorTextMax = 48

// errorCode names a refused POST by its status and the code of its {"code","message"} body, or,
// where the body is text (a did:orb server answers with Orb's plain-text messages), by the
// start of its first line.
func errorCode(status int, body []byte) string {
	var eb struct {
		Code string `json:"code"`
	}
	if json.Unmarshal(body, &eb) == nil && eb.Code != "" {
		return fmt.Sprintf("%d:%s", status, eb.Code)
	}
	text, _, _ := strings.Cut(strings.TrimSpace(string(body)), "\n")
	if len(text) > errorTextMax {
		text = strings.ToValidUTF8(text[:errorTextMax], "") + "…"
	}
	return fmt.Sprintf("%d:%q", status, text)
}

// metadata is the part of a resolution result the generator checks.
type metadata struct {
	Method struct {
		Published          bool   `json:"published"`
		UpdateCommitment   string `json:"updateCommitment"`
		RecoveryCommitment string `json:"recoveryCommitment"`
	} `json:"method"`
}

// follow resolves the DID until done says the operation shows, records the latency, and then
// makes the identity (if any) available for further operations.
func (r *runner) follow(ctx context.Context, suffix string, done func(int, metadata) bool, id *wallet.Identity, measure bool) {
	poll := followPollQuiet
	if measure {
		poll = followPoll
	}
	r.stats.followStart()
	r.follows.Go(func() {
		start := time.Now()
		deadline := start.Add(r.cfg.ResolveTimeout)
		did := "did:" + r.cfg.Method + ":" + suffix
		for time.Now().Before(deadline) && ctx.Err() == nil {
			code, md := r.resolve(ctx, did)
			if done(code, md) {
				r.stats.followDone(start, time.Since(start), measure, true)
				if id != nil {
					r.give(id)
				}
				return
			}
			time.Sleep(poll)
		}
		r.stats.followDone(start, 0, measure, false)
	})
}

func (r *runner) resolve(ctx context.Context, did string) (int, metadata) {
	var md metadata
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.target()+"/sidetree/v1/identifiers/"+did, nil)
	if err != nil {
		return 0, md
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return 0, md
	}
	defer resp.Body.Close()
	var body struct {
		Metadata metadata `json:"didDocumentMetadata"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil && !errors.Is(err, io.EOF) {
		return resp.StatusCode, md
	}
	return resp.StatusCode, body.Metadata
}

func (r *runner) take() *wallet.Identity {
	r.poolMu.Lock()
	defer r.poolMu.Unlock()
	if len(r.pool) == 0 {
		return nil
	}
	i := rand.IntN(len(r.pool))
	id := r.pool[i]
	r.pool[i] = r.pool[len(r.pool)-1]
	r.pool = r.pool[:len(r.pool)-1]
	return id
}

func (r *runner) give(id *wallet.Identity) {
	r.poolMu.Lock()
	r.pool = append(r.pool, id)
	r.poolMu.Unlock()
}

// warmup creates WarmupDIDs DIDs and waits until every one resolves as published.
func (r *runner) warmup(ctx context.Context) error {
	sem := make(chan struct{}, r.cfg.Concurrency)
	var wg sync.WaitGroup
	for range r.cfg.WarmupDIDs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			r.create(ctx, true, false)
		})
	}
	wg.Wait()
	r.follows.Wait()
	r.poolMu.Lock()
	n := len(r.pool)
	r.poolMu.Unlock()
	if n == 0 {
		return errors.New("warm-up: no DID became resolvable; is the target anchoring?")
	}
	return nil
}
