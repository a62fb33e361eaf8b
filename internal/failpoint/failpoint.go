// Package failpoint lets crash tests kill the process at a named point of the write path, so
// that "kill -9 in the middle of a batch" is tested at every interesting step rather than only
// wherever a timer happens to land.
//
// It is off unless the environment variable ANCHORD_FAILPOINTS is set when the process starts,
// e.g. ANCHORD_FAILPOINTS="batch-after-cas=3,observer-before-commit=1": the process sends itself
// SIGKILL the third time it passes batch-after-cas, or the first time it passes
// observer-before-commit. Off, Hit costs one load of a nil map.
//
// A point may instead fail: "batch-fail=3" makes Err return an error the first three times the
// process passes batch-fail, so that tests can make a step fail (and be retried) without killing
// the process.
//
// A point may also be a gate: "observer-before-index=/tmp/t/gate" (an absolute path) makes Pause
// wait at observer-before-index for as long as that file exists, so that a test holds a process
// inside a window (an anchor recorded, its operations not yet indexed) for exactly as long as it
// needs, instead of hoping a timer is long enough.
package failpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// EnvVar names the failpoints to arm.
const EnvVar = "ANCHORD_FAILPOINTS"

// Points of the write path. Each sits just before a commit or between two durable steps.
const (
	OpQueueBeforeCommit  = "opqueue-before-commit"  // operations handed to the committer, not committed
	OpQueueAfterCommit   = "opqueue-after-commit"   // committed, callers not yet answered
	BatchAfterCAS        = "batch-after-cas"        // batch files stored, anchor not recorded
	BatchBeforeCommit    = "batch-before-commit"    // anchor written and batch acked inside the transaction
	BatchAfterCommit     = "batch-after-commit"     // anchor committed, observer not yet told
	ObserverBeforeCommit = "observer-before-commit" // index rows written inside the transaction
	ObserverAfterSlice   = "observer-after-slice"   // some of an anchor's index rows committed, the anchor not marked observed
	ObserverBeforeIndex  = "observer-before-index"  // an anchor completed, its operations not yet indexed (a gate: Pause)

	ObserverBeforeForeignCommit = "observer-before-foreign-commit" // another domain's anchor and its index rows written inside the transaction
	RelayBeforePublish          = "relay-before-publish"           // an anchor of ours indexed, its Create not yet built
	RelayBeforePublishCommit    = "relay-before-publish-commit"    // marked published and its Create in the outbox inside the transaction
	WitnessBeforeCompleteCommit = "witness-before-complete-commit" // a witness's proof recorded and the anchor completed inside the transaction

	// Points that fail instead of killing (Err).
	BatchFail          = "batch-fail"           // the batch writer fails before storing the files: the batch is Nack'd
	OpQueueConsumeFail = "opqueue-consume-fail" // the operation consumer fails: the message goes to redelivery
	// WitnessSkipLogAppend makes a witness with a log answer without appending the credential
	// and promise the log's current size as its index, an entry that will never be there: the
	// witness that lies, for the proof monitor's tests. Arm it with a count above the Offers
	// the test sends.
	WitnessSkipLogAppend = "witness-skip-log-append"
)

var (
	armed = parse(os.Getenv(EnvVar))
	gates = parseGates(os.Getenv(EnvVar))
	mu    sync.Mutex
	hits  = map[string]int{}
)

func parse(s string) map[string]int {
	if s == "" {
		return nil
	}
	m := map[string]int{}
	for _, part := range strings.Split(s, ",") {
		name, n, ok := strings.Cut(strings.TrimSpace(part), "=")
		k, err := strconv.Atoi(n)
		if !ok || err != nil || k < 1 {
			continue
		}
		m[name] = k
	}
	return m
}

// parseGates returns the points armed with a gate file: an absolute path.
func parseGates(s string) map[string]string {
	m := map[string]string{}
	for _, part := range strings.Split(s, ",") {
		name, path, ok := strings.Cut(strings.TrimSpace(part), "=")
		if ok && filepath.IsAbs(path) {
			m[name] = path
		}
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// gatePoll is how often a paused point looks at its gate file again.
const gatePoll = 10 * time.Millisecond

// Pause waits at name while its gate file exists, and returns nil once it does not (at once when
// name is not a gate). It returns ctx's error if ctx ends first: the caller must then not carry
// on past the point.
func Pause(ctx context.Context, name string) error {
	path, ok := gates[name]
	if !ok {
		return nil
	}
	return pauseAt(ctx, name, path)
}

func pauseAt(ctx context.Context, name, path string) error {
	t := time.NewTicker(gatePoll)
	defer t.Stop()
	for {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("failpoint %s: %w", name, ctx.Err())
		case <-t.C:
		}
	}
}

// Hit kills the process if name is armed and this is its configured hit.
func Hit(name string) {
	if armed == nil {
		return
	}
	n, ok := armed[name]
	if !ok {
		return
	}
	mu.Lock()
	hits[name]++
	now := hits[name]
	mu.Unlock()
	if now == n {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is delivered asynchronously; never continue past the point
	}
}

// ErrInjected is returned by Err at an armed failing point.
var ErrInjected = errors.New("failpoint: injected failure")

// Err returns ErrInjected the first N times the process passes name when name=N is armed, and nil
// otherwise.
func Err(name string) error {
	if armed == nil {
		return nil
	}
	n, ok := armed[name]
	if !ok {
		return nil
	}
	mu.Lock()
	hits[name]++
	now := hits[name]
	mu.Unlock()
	if now <= n {
		return fmt.Errorf("%s (%d of %d): %w", name, now, n, ErrInjected)
	}
	return nil
}
