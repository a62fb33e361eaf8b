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
package failpoint

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
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
