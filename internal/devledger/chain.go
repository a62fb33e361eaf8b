package devledger

import (
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/anchord/anchord/internal/ledger"
	"github.com/anchord/anchord/internal/ledger/sawtooth"
)

// scopeSawtooth is the scope of the Sawtooth REST routes; scabbard routes use
// "<circuit>::<service>".
const scopeSawtooth = ""

type batchKey struct {
	scope string
	id    string
}

type invalidTxn struct {
	id      string
	message string
}

// record is one batch the ledger holds.
type record struct {
	key           batchKey
	txns          []sawtooth.VerifiedTransaction
	acceptedAt    time.Time
	dueAt         time.Time
	status        ledger.Status // PENDING until due, then COMMITTED or INVALID
	invalid       []invalidTxn
	forcedInvalid bool
}

// chain is the ledger's state: the batches it holds, those still pending in due order, and the
// anchors committed so far by state address. It is not safe for concurrent use; Server guards
// it with its mutex.
type chain struct {
	family  string
	version string
	delay   time.Duration
	batches map[batchKey]*record
	// queue holds the pending records in order of dueAt: the delay is constant, so acceptance
	// order is due order.
	queue []*record
	// anchors maps a state address to the anchor committed there, per scope.
	anchors map[batchKey]string
}

func newChain(family, version string, delay time.Duration) *chain {
	return &chain{
		family:  family,
		version: version,
		delay:   delay,
		batches: make(map[batchKey]*record),
		anchors: make(map[batchKey]string),
	}
}

// accept records the batches not yet known in scope and reports how many were new and how
// many were already held (those are left exactly as they were).
func (c *chain) accept(scope string, batches []sawtooth.VerifiedBatch, now time.Time, forceInvalid bool) (added, dups int) {
	for _, b := range batches {
		k := batchKey{scope: scope, id: b.ID}
		if _, ok := c.batches[k]; ok {
			dups++
			continue
		}
		r := &record{
			key: k, txns: b.Transactions, acceptedAt: now, dueAt: now.Add(c.delay),
			status: ledger.StatusPending, forcedInvalid: forceInvalid,
		}
		c.batches[k] = r
		c.queue = append(c.queue, r)
		added++
	}
	return added, dups
}

// commitDue settles every pending batch whose time has come, in acceptance order, and reports
// how many were committed and how many found invalid.
func (c *chain) commitDue(now time.Time) (committed, invalid int) {
	n := 0
	for n < len(c.queue) && !c.queue[n].dueAt.After(now) {
		r := c.queue[n]
		r.invalid = c.process(r)
		if len(r.invalid) > 0 {
			r.status = ledger.StatusInvalid
			invalid++
		} else {
			r.status = ledger.StatusCommitted
			committed++
		}
		c.queue[n] = nil
		n++
	}
	c.queue = slices.Delete(c.queue, 0, n)
	return committed, invalid
}

// process plays the anchord transaction processor: it checks every transaction and, when all
// pass, writes their anchors to state. It returns the transactions it refused.
func (c *chain) process(r *record) []invalidTxn {
	var bad []invalidTxn
	writes := make(map[batchKey]string, len(r.txns))
	for _, t := range r.txns {
		var msg string
		if r.forcedInvalid {
			msg = "injected fault: transaction refused by the processor"
		} else {
			msg = c.check(r.key.scope, t, writes)
		}
		if msg != "" {
			bad = append(bad, invalidTxn{id: t.ID, message: msg})
		}
	}
	if len(bad) == 0 {
		for k, v := range writes {
			c.anchors[k] = v
		}
	}
	return bad
}

// check validates one transaction against the family rules and the state (including writes of
// earlier transactions of the same batch), records its write in writes, and returns "" or why
// it is invalid.
func (c *chain) check(scope string, t sawtooth.VerifiedTransaction, writes map[batchKey]string) string {
	h := t.Header
	if h.GetFamilyName() != c.family || h.GetFamilyVersion() != c.version {
		// A real validator would keep such a batch PENDING until a processor for the family
		// registers; the devledger has exactly one processor and says so.
		return "no transaction processor for family " + strconv.Quote(h.GetFamilyName()) + " version " + strconv.Quote(h.GetFamilyVersion())
	}
	anchor := string(t.Payload)
	if err := checkAnchor(anchor); err != "" {
		return "payload is not an anchor string: " + err
	}
	addr := sawtooth.AnchorAddress(c.family, anchor)
	if !slices.Contains(h.GetInputs(), addr) || !slices.Contains(h.GetOutputs(), addr) {
		return "inputs and outputs must include the anchor's address " + addr
	}
	k := batchKey{scope: scope, id: addr}
	if _, done := c.anchors[k]; done {
		return "anchor " + strconv.Quote(anchor) + " is already recorded at " + addr
	}
	if _, done := writes[k]; done {
		return "anchor " + strconv.Quote(anchor) + " appears twice in the batch"
	}
	writes[k] = anchor
	return ""
}

// checkAnchor accepts "<count>.<reference>": count a positive decimal integer without leading
// zeros, reference non-empty printable text without spaces (a CID in anchord).
func checkAnchor(a string) string {
	count, ref, ok := strings.Cut(a, ".")
	if !ok {
		return `want "<count>.<reference>"`
	}
	if count == "" || count[0] == '0' {
		return "count must be a positive integer without leading zeros"
	}
	if n, err := strconv.ParseUint(count, 10, 32); err != nil || n == 0 {
		return "count must be a positive integer below 2^32"
	}
	if ref == "" {
		return "reference is empty"
	}
	for _, r := range ref {
		if unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return "reference holds white space or unprintable characters"
		}
	}
	return ""
}

// lookup returns the batch held under k, or nil.
func (c *chain) lookup(k batchKey) *record { return c.batches[k] }
