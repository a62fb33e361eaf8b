package main

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/logmonitor"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/sqlitestore"
	"github.com/anchord/anchord/internal/witnesslog"
)

// TestLogRewrittenOnDiskIsReportedWithBothCheckpoints: A follows B, whose witness log A's
// consistency monitor has verified at size 3. B's log is then rewritten on disk (its files
// removed, and four different entries appended with B's key): A reports the inconsistency once,
// as a dead letter of kind log_inconsistency holding both checkpoints, each still verifying with
// B's published key — evidence that stands on its own.
func TestLogRewrittenOnDiskIsReportedWithBothCheckpoints(t *testing.T) {
	t.Parallel()
	keyFile, keyB := writeKeyFile(t)
	b := startDomain(t, "b", "--witness-log", "--key-file", keyFile)
	a := startDomain(t, "a", logTiming...)
	a.follow(b)
	origin, err := witnesslog.OriginFor("http://" + b.addr)
	require.NoError(t, err)
	verified := `anchord_logmonitor_verified_size{log="` + origin + `"}`

	b.stop()
	b.appendOffline(keyB, []byte(`{"id":"urn:uuid:one"}`), []byte(`{"id":"urn:uuid:two"}`), []byte(`{"id":"urn:uuid:three"}`))
	b.start()
	anchordtest.Eventually(t, 20*time.Second, 100*time.Millisecond, func() bool {
		size, _ := scrape(t, a, verified)
		return size == 3
	}, "A verified B's log at size 3")

	b.stop()
	require.NoError(t, os.RemoveAll(filepath.Join(b.dir, "log")))
	b.appendOffline(keyB, []byte(`{"id":"urn:uuid:forged"}`), []byte(`{"id":"urn:uuid:two"}`), []byte(`{"id":"urn:uuid:three"}`), []byte(`{"id":"urn:uuid:four"}`))
	pubB := keyB.Public().(ed25519.PublicKey)
	b.start()
	anchordtest.Eventually(t, 20*time.Second, 100*time.Millisecond, func() bool {
		n, _ := scrape(t, a, `anchord_logmonitor_reported_total`)
		return n >= 1
	}, "A reported B's rewritten log")
	time.Sleep(2 * time.Second) // a few more monitor runs: still reported once
	size, _ := scrape(t, a, verified)
	require.EqualValues(t, 3, size, "the verified size stays where it was")

	a.stop()
	st, err := sqlitestore.Open(context.Background(), sqlitestore.Config{DataDir: a.dir})
	require.NoError(t, err)
	defer st.Close()
	letters, err := st.DeadLetterList(context.Background(), store.DeadLetterListParams{Kind: logmonitor.DeadLetterLogInconsistency, Limit: 10})
	require.NoError(t, err)
	require.Len(t, letters, 1, "reported once")
	var ev logmonitor.Evidence
	require.NoError(t, json.Unmarshal(letters[0].Payload, &ev))
	older, err := witnesslog.OpenCheckpoint(ev.Older, origin, pubB)
	require.NoError(t, err, "the older checkpoint verifies with B's key")
	newer, err := witnesslog.OpenCheckpoint(ev.Newer, origin, pubB)
	require.NoError(t, err, "the newer checkpoint verifies with B's key")
	require.EqualValues(t, 3, older.Size)
	require.EqualValues(t, 4, newer.Size)
	t.Logf("evidence: %s", ev.Reason)
}
