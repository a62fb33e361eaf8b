package loadgen

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/anchord/anchord/internal/param"
)

// Defaults.
const (
	TargetDefault         = "http://127.0.0.1:8080"
	ConcurrencyDefault    = 16
	DurationDefault       = 30 * time.Second
	MixDefault            = "create=100"
	SampleEveryDefault    = 100
	ResolveTimeoutDefault = 60 * time.Second
	WarmupDIDsDefault     = 500
	KeyPoolDefault        = 64
	MethodDefault         = "sidetree"
)

// Config configures a run.
type Config struct {
	Target      string
	Concurrency int
	// Rate is operations per second; 0 means as fast as Concurrency allows (closed loop).
	Rate float64
	// Duration bounds the timed phase; 0 means none when Count is set, DurationDefault when not.
	Duration time.Duration
	// Count stops the run after this many operations were sent (0: no limit), so that a load of
	// a named size (a million creates) is one run.
	Count int
	// Mix weighs operation types, e.g. "create=70,update=20,recover=5,deactivate=5"; "resolve"
	// is a GET of a known DID (see ResolveDIDs).
	Mix string
	// SampleEvery: one operation in SampleEvery is measured: followed until it resolves, polling
	// every 100 ms. Every update, recover and deactivate is followed (that is how its DID becomes
	// usable again), the others polling every 500 ms and not measured.
	SampleEvery    int
	ResolveTimeout time.Duration
	// WarmupDIDs is how many DIDs a mixed run creates and waits for before the timed phase.
	WarmupDIDs int
	KeyPool    int
	Method     string
	// AcceptedOut, when set, receives one line per accepted operation: "<type> <suffix> <reveal value>" ("-" for a create).
	AcceptedOut string
	// Report, when set, is an HTML file the run's plots are written to.
	Report string
	// Interval, when positive, prints one line per interval of the timed phase: its accepted/s,
	// POST p50/p99 and the accept→resolvable p95 of the samples that resolved in it.
	Interval time.Duration
	// ResolveDIDs is a file of DIDs the resolve operations of the mix draw from, in the
	// --accepted-out format (the creates' suffixes are used) or one suffix per line. Without it,
	// resolves draw from the DIDs this run saw published.
	ResolveDIDs string
}

// Default returns the defaults.
func Default() Config {
	return Config{
		Target: TargetDefault, Concurrency: ConcurrencyDefault, Mix: MixDefault,
		SampleEvery: SampleEveryDefault, ResolveTimeout: ResolveTimeoutDefault, WarmupDIDs: WarmupDIDsDefault,
		KeyPool: KeyPoolDefault, Method: MethodDefault,
	}
}

func (c *Config) params() []param.Param {
	return []param.Param{
		param.String(&c.Target, "target", "base URL of the anchord to load; several, comma-separated, are used in turn and a request that gets no answer (or 503) is retried on the next"),
		param.Int(&c.Concurrency, "concurrency", "requests in flight at most"),
		param.Float(&c.Rate, "rate", "operations per second; 0 sends as fast as --concurrency allows"),
		param.Duration(&c.Duration, "duration", "length of the timed phase (0: 30s without --count, no limit with it)"),
		param.Int(&c.Count, "count", "stop after this many operations (0: no limit); with it, --duration is no limit unless set"),
		param.String(&c.Mix, "mix", "weights of operation types, e.g. create=70,update=20,recover=5,deactivate=5; resolve=100 measures GET /identifiers of known DIDs"),
		param.Int(&c.SampleEvery, "sample-every", "measure accept→resolvable for one operation in this many"),
		param.Duration(&c.ResolveTimeout, "resolve-timeout", "give up following an operation after this long"),
		param.Int(&c.WarmupDIDs, "warmup-dids", "DIDs created and awaited before a mixed run"),
		param.Int(&c.KeyPool, "key-pool", "keys shared by creates (keeps key generation out of the measurement)"),
		param.String(&c.Method, "did-method", "DID method of the target"),
		param.String(&c.AcceptedOut, "accepted-out", "file to list every accepted operation in, warm-up included (type, suffix, reveal value or - for a create)"),
		param.String(&c.Report, "report", "write an HTML report (accepted/s, POST latency percentiles and accept→resolvable latency over time) to this file"),
		param.Duration(&c.Interval, "interval", "print accepted/s, POST p50/p99 and accept→resolvable p95 (of the samples resolved in it) once per this interval of the timed phase (0: off)"),
		param.String(&c.ResolveDIDs, "resolve-dids", "file of DIDs for the mix's resolve operations: an --accepted-out file (its creates) or one suffix per line; without it they resolve DIDs this run saw published"),
	}
}

// Load parses `anchord loadgen` arguments.
func Load(args []string, lookupEnv func(string) (string, bool), out interface{ Write([]byte) (int, error) }) (Config, error) {
	c := Default()
	if err := param.Parse("loadgen", args, lookupEnv, c.params(), out); err != nil {
		return Config{}, err
	}
	return c, c.validate()
}

func (c *Config) validate() error {
	for _, t := range c.Targets() {
		u, err := url.Parse(t)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return &param.Error{Param: "target", Value: c.Target, Err: fmt.Errorf("%q is not an http(s) URL", t)}
		}
	}
	if c.Concurrency < 1 {
		return &param.Error{Param: "concurrency", Value: strconv.Itoa(c.Concurrency), Err: fmt.Errorf("must be at least 1")}
	}
	if c.Rate < 0 {
		return &param.Error{Param: "rate", Value: fmt.Sprint(c.Rate), Err: fmt.Errorf("must not be negative")}
	}
	if c.Duration < 0 {
		return &param.Error{Param: "duration", Value: c.Duration.String(), Err: fmt.Errorf("must not be negative")}
	}
	if c.Duration == 0 && c.Count <= 0 {
		c.Duration = DurationDefault
	}
	if c.Interval < 0 {
		return &param.Error{Param: "interval", Value: c.Interval.String(), Err: fmt.Errorf("must not be negative")}
	}
	if c.SampleEvery < 1 {
		return &param.Error{Param: "sample-every", Value: strconv.Itoa(c.SampleEvery), Err: fmt.Errorf("must be at least 1")}
	}
	if c.KeyPool < 2 {
		return &param.Error{Param: "key-pool", Value: strconv.Itoa(c.KeyPool), Err: fmt.Errorf("must be at least 2")}
	}
	if _, err := parseMix(c.Mix); err != nil {
		return &param.Error{Param: "mix", Value: c.Mix, Err: err}
	}
	return nil
}

// Targets returns the target URLs.
func (c *Config) Targets() []string {
	var out []string
	for _, t := range strings.Split(c.Target, ",") {
		if t = strings.TrimRight(strings.TrimSpace(t), "/"); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// mix is a cumulative weight table over operation types.
type mix struct {
	types []string
	cum   []int
	total int
}

func parseMix(s string) (mix, error) {
	var m mix
	for _, part := range strings.Split(s, ",") {
		name, w, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return m, fmt.Errorf("%q is not type=weight", part)
		}
		switch name {
		case "create", "update", "recover", "deactivate", "resolve":
		default:
			return m, fmt.Errorf("unknown operation type %q", name)
		}
		n, err := strconv.Atoi(w)
		if err != nil || n < 0 {
			return m, fmt.Errorf("weight of %s must be a non-negative integer", name)
		}
		if n == 0 {
			continue
		}
		m.total += n
		m.types = append(m.types, name)
		m.cum = append(m.cum, m.total)
	}
	if m.total == 0 {
		return m, fmt.Errorf("no operation type has a weight")
	}
	return m, nil
}

func (m mix) pick(r int) string {
	r %= m.total
	for i, c := range m.cum {
		if r < c {
			return m.types[i]
		}
	}
	return m.types[len(m.types)-1]
}

func (m mix) onlyCreates() bool { return len(m.types) == 1 && m.types[0] == "create" }

func (m mix) has(kind string) bool {
	for _, t := range m.types {
		if t == kind {
			return true
		}
	}
	return false
}

// needsPublished reports whether the mix draws on DIDs the run saw published: its changes do,
// and so do its resolves when no --resolve-dids file gives them DIDs.
func (m mix) needsPublished(resolveFile bool) bool {
	return m.has("update") || m.has("recover") || m.has("deactivate") || (m.has("resolve") && !resolveFile)
}
