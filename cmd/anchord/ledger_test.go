package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/devledger"
	"github.com/anchord/anchord/internal/devledger/devledgertest"
	"github.com/anchord/anchord/internal/sidetree/wallet"
	"github.com/anchord/anchord/internal/store"
)

// TestLedgerBackendGivesBackRejectedAnchors runs anchord with the ledger backend against the
// development ledger, which answers 503 to a fifth of the submissions and finds half of the
// committed batches INVALID. Every accepted create must end up in exactly one committed anchor,
// and the operations of every rejected anchor must have gone back to the queue and been anchored
// again: nothing is abandoned (the durability chain, link 4).
func TestLedgerBackendGivesBackRejectedAnchors(t *testing.T) {
	t.Parallel()
	led := devledgertest.Start(t, devledger.Config{
		NowFunc: time.Now, CommitDelay: 100 * time.Millisecond,
		Faults: devledger.FaultConfig{Seed: 11, Unavailable: 0.2, Invalid: 0.5},
	})
	addr := anchordtest.FreeAddr(t)
	p := anchordtest.StartProcess(t, anchordtest.ProcessConfig{
		Args: []string{"serve", "--host-url", addr, "--anchor-backend", "ledger", "--ledger-url", led.URL,
			"--batch-writer-timeout", "100ms", "--submitter-interval", "50ms", "--submitter-backoff-initial", "50ms",
			"--submitter-backoff-max", "200ms", "--ledger-status-poll-interval", "500ms", "--task-manager-check-interval", "1s"},
		Addr: addr,
	})
	p.WaitHealthy(30 * time.Second)
	c := newClient(addr)
	w := wallet.New(wallet.Config{})

	var dids []string
	for wave := range 12 {
		for range 10 {
			id, req, err := w.Create()
			require.NoError(t, err)
			code, body, err := c.post(req)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, code, "wave %d: %s", wave, body)
			dids = append(dids, id.Suffix)
		}
		time.Sleep(150 * time.Millisecond) // let this wave become its own batch
	}

	for _, s := range dids {
		anchordtest.Eventually(t, 90*time.Second, 50*time.Millisecond, func() bool {
			code, _, err := c.resolve("did:sidetree:" + s)
			return err == nil && code == http.StatusOK
		}, "DID %s never resolvable", s)
	}

	// Read every anchor back: committed ones hold each create exactly once; rejected ones hold
	// creates that were anchored again later.
	completedBy := map[string]int{}
	var failedCreates []string
	for _, a := range c.anchors(t) {
		b := c.batch(t, a.AnchorString)
		for _, op := range b.Operations {
			switch a.Status {
			case store.AnchorCompleted:
				completedBy[op.Suffix]++
			case store.AnchorFailed:
				failedCreates = append(failedCreates, op.Suffix)
			}
		}
	}
	for _, s := range dids {
		require.Equal(t, 1, completedBy[s], "create of %s in %d committed anchors", s, completedBy[s])
	}
	stats := led.Stats()
	require.Positive(t, stats.Invalid, "the ledger rejected some anchors")
	require.NotEmpty(t, failedCreates, "some anchors failed")
	for _, s := range failedCreates {
		require.Equal(t, 1, completedBy[s], "operation of a rejected anchor was anchored again, once")
	}
	require.Zero(t, stats.Duplicates, "no batch submitted again after the ledger recorded it")
	t.Logf("%d creates; ledger: %d submissions, %d accepted, %d committed, %d invalid, faults %v; %d creates went through a rejected anchor",
		len(dids), stats.Submissions, stats.Accepted, stats.Committed, stats.Invalid, stats.Faults, len(failedCreates))
}
