package main

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/tessera/client"
	"golang.org/x/mod/sumdb/note"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/federation"
	"github.com/anchord/anchord/internal/httpsig"
	"github.com/anchord/anchord/internal/logmonitor"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/sqlitestore"
	"github.com/anchord/anchord/internal/witnesslog"
)

// logTiming runs the log consistency monitor every 500 ms, checked by the task manager every
// second: a permit threshold of 1.5 s, whose trust window (1.2 s) a busy machine's SQLite
// refreshes within (with 200 ms checks the window was 560 ms, and runs were cancelled under load).
var logTiming = []string{"--witness-log-monitoring-interval", "500ms", "--task-manager-check-interval", "1s"}

// actorKey reads the public key of a domain's actor document: what another domain verifies its
// checkpoints with.
func (d *relayDomain) actorKey() ed25519.PublicKey {
	d.t.Helper()
	resp, err := http.Get(d.actor)
	require.NoError(d.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(d.t, err)
	a, err := activity.ParseActor(body)
	require.NoError(d.t, err)
	require.NotNil(d.t, a.PublicKey)
	pub, err := httpsig.DecodePublicKeyPEM(a.PublicKey.PublicKeyPem)
	require.NoError(d.t, err)
	return pub
}

// requirePrivateTree fails unless every directory under root is 0700 and every file 0600: the
// witness log is the domain's alone, like the rest of its data directory.
func requirePrivateTree(t *testing.T, root string) {
	t.Helper()
	files := 0
	require.NoError(t, filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		info, err := d.Info()
		require.NoError(t, err)
		if d.IsDir() {
			require.Equal(t, fs.FileMode(0o700), info.Mode().Perm(), path)
		} else {
			files++
			require.Equal(t, fs.FileMode(0o600), info.Mode().Perm(), path)
		}
		return nil
	}))
	require.Positive(t, files, "the log has files under %s", root)
}

// appendOffline appends entries to a stopped domain's witness log, as its witness would have,
// with the domain's key, and returns their indices.
func (d *relayDomain) appendOffline(key ed25519.PrivateKey, entries ...[]byte) []uint64 {
	d.t.Helper()
	require.True(d.t, d.process().Exited(), "the domain is stopped: one process appends to a log directory")
	ctx := context.Background()
	origin, err := witnesslog.OriginFor("http://" + d.addr)
	require.NoError(d.t, err)
	l, err := witnesslog.OpenPOSIX(ctx, witnesslog.Config{Origin: origin, Key: key, Logger: anchordtest.Logger(d.t)}, filepath.Join(d.dir, "log"))
	require.NoError(d.t, err)
	var idx []uint64
	for _, e := range entries {
		i, err := l.Append(ctx, e)
		require.NoError(d.t, err)
		idx = append(idx, i)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(d.t, l.Close(cctx), "closed once a checkpoint covers every entry")
	return idx
}

// TestWitnessLogServesCheckpointsSignedWithTheDomainKey: an embedded domain with --witness-log
// advertises its log in WebFinger and serves it under /log/; tessera's own client reads it, and
// its checkpoints verify with the key of the domain's actor document, before and after entries
// are appended.
func TestWitnessLogServesCheckpointsSignedWithTheDomainKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	keyFile, key := writeKeyFile(t)
	d := startDomain(t, "a", "--witness-log", "--key-file", keyFile)
	pub := d.actorKey()
	require.Equal(t, key.Public(), pub, "the actor document publishes the domain key")

	resp, err := http.Get("http://" + d.addr + "/.well-known/webfinger?resource=" + url.QueryEscape(d.actor))
	require.NoError(t, err)
	var jrd struct {
		Properties map[string]any `json:"properties"`
		Links      []struct {
			Rel, Href string
		} `json:"links"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&jrd))
	require.NoError(t, resp.Body.Close())
	require.Equal(t, federation.LedgerTypeTLogTiles, jrd.Properties[federation.LedgerTypeProperty])
	require.Contains(t, jrd.Links, struct{ Rel, Href string }{federation.LogRelation, "http://" + d.addr + "/log"})

	origin, err := witnesslog.OriginFor("http://" + d.addr)
	require.NoError(t, err)
	vkey, err := witnesslog.VerifierKey(origin, pub)
	require.NoError(t, err)
	verifier, err := note.NewVerifier(vkey)
	require.NoError(t, err)
	root, err := url.Parse("http://" + d.addr + "/log/")
	require.NoError(t, err)
	fetcher, err := client.NewHTTPFetcher(root, http.DefaultClient)
	require.NoError(t, err)

	// The running daemon signs the empty tree's checkpoint itself.
	anchordtest.Eventually(t, 10*time.Second, 100*time.Millisecond, func() bool {
		_, _, _, err := client.FetchCheckpoint(ctx, fetcher.ReadCheckpoint, verifier, origin)
		return err == nil
	}, "the daemon publishes a checkpoint")
	cp, _, _, err := client.FetchCheckpoint(ctx, fetcher.ReadCheckpoint, verifier, origin)
	require.NoError(t, err)
	require.Zero(t, cp.Size)

	d.stop()
	entries := make([][]byte, 5)
	for i := range entries {
		entries[i] = fmt.Appendf(nil, `{"id":"urn:uuid:vc-%d","type":["VerifiableCredential","AnchorCredential"]}`, i)
	}
	require.Equal(t, []uint64{0, 1, 2, 3, 4}, d.appendOffline(key, entries...))
	d.start()
	// Written by this test's process, 0644 and 0755; the daemon tightened them as it opened.
	requirePrivateTree(t, filepath.Join(d.dir, "log"))

	cp, _, _, err = client.FetchCheckpoint(ctx, fetcher.ReadCheckpoint, verifier, origin)
	require.NoError(t, err, "the checkpoint verifies with the actor's key")
	require.EqualValues(t, len(entries), cp.Size)
	bundle, err := client.GetEntryBundle(ctx, fetcher.ReadEntryBundle, 0, cp.Size)
	require.NoError(t, err)
	require.Equal(t, entries, bundle.Entries, "the partial entry bundle holds the entries, in order")
	pb, err := client.NewProofBuilder(ctx, cp.Size, fetcher.ReadTile)
	require.NoError(t, err)
	for i, e := range entries {
		prf, err := pb.InclusionProof(ctx, uint64(i))
		require.NoError(t, err)
		require.NoError(t, proof.VerifyInclusion(rfc6962.DefaultHasher, uint64(i), cp.Size, rfc6962.DefaultHasher.HashLeaf(e), prf, cp.Hash), "entry %d", i)
	}

	// Bad paths are the client's fault.
	for _, p := range []string{"/log/tile/x/000", "/log/tile/entries/abc"} {
		resp, err := http.Get("http://" + d.addr + p)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, p)
	}
	d.stop()
}

// TestLogMonitorWatchesAFollowedDomainsLog: A follows B, whose witness log is on; A's log
// consistency monitor finds B's log through B's WebFinger, stores B's checkpoint, and stores
// the larger one once B's log has grown, after proving it consistent.
func TestLogMonitorWatchesAFollowedDomainsLog(t *testing.T) {
	t.Parallel()
	keyFile, keyB := writeKeyFile(t)
	b := startDomain(t, "b", "--witness-log", "--key-file", keyFile)
	a := startDomain(t, "a", logTiming...)
	a.follow(b)
	origin, err := witnesslog.OriginFor("http://" + b.addr)
	require.NoError(t, err)
	verified := `anchord_logmonitor_verified_size{log="` + origin + `"}`

	anchordtest.Eventually(t, 15*time.Second, 100*time.Millisecond, func() bool {
		_, ok := scrape(t, a, verified)
		return ok
	}, "A verified B's first checkpoint")
	first, _ := scrape(t, a, `anchord_logmonitor_checks_total{outcome="first"}`)
	require.Equal(t, 1.0, first)

	b.stop()
	b.appendOffline(keyB, []byte(`{"id":"urn:uuid:one"}`), []byte(`{"id":"urn:uuid:two"}`), []byte(`{"id":"urn:uuid:three"}`))
	b.start()
	anchordtest.Eventually(t, 15*time.Second, 100*time.Millisecond, func() bool {
		size, _ := scrape(t, a, verified)
		return size == 3
	}, "A verified B's grown log")
	advanced, _ := scrape(t, a, `anchord_logmonitor_checks_total{outcome="advanced"}`)
	require.GreaterOrEqual(t, advanced, 1.0)
	inconsistent, _ := scrape(t, a, `anchord_logmonitor_inconsistencies_total`)
	require.Zero(t, inconsistent)

	a.stop()
	st, err := sqlitestore.Open(context.Background(), sqlitestore.Config{DataDir: a.dir})
	require.NoError(t, err)
	defer st.Close()
	row, err := st.LogCheckpointGet(context.Background(), origin)
	require.NoError(t, err)
	require.EqualValues(t, 3, row.Size)
	require.Nil(t, row.Rejected)
	cp, err := witnesslog.OpenCheckpoint(row.Checkpoint, origin, b.actorKey())
	require.NoError(t, err, "the stored checkpoint is B's, signed with B's key")
	require.EqualValues(t, 3, cp.Size)
	letters, err := st.DeadLetterList(context.Background(), store.DeadLetterListParams{Kind: logmonitor.DeadLetterLogInconsistency, Limit: 10})
	require.NoError(t, err)
	require.Empty(t, letters)
}

// scrape reads one series of a domain's /metrics, named with its labels as Prometheus writes
// them; false when the series does not exist (yet).
func scrape(t *testing.T, d *relayDomain, series string) (float64, bool) {
	t.Helper()
	resp, err := http.Get("http://" + d.addr + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			var f float64
			_, err := fmt.Sscanf(v, "%g", &f)
			require.NoError(t, err)
			return f, true
		}
	}
	require.NoError(t, sc.Err())
	return 0, false
}

// mariaDBDatabase creates a database of its own for the test on the server of
// ANCHORD_TEST_MARIADB_URL, drops it when the test ends, and returns its URL.
func mariaDBDatabase(t *testing.T) string {
	t.Helper()
	server := anchordtest.MariaDBURL(t)
	u, err := url.Parse(server)
	require.NoError(t, err)
	mcfg := mysql.NewConfig()
	mcfg.Net, mcfg.Addr, mcfg.User = "tcp", u.Host, u.User.Username()
	mcfg.Passwd, _ = u.User.Password()
	conn, err := mysql.NewConnector(mcfg)
	require.NoError(t, err)
	db := sql.OpenDB(conn)
	t.Cleanup(func() { _ = db.Close() })
	var suffix [6]byte
	_, err = rand.Read(suffix[:])
	require.NoError(t, err)
	name := "anchord_cmdtest_" + hex.EncodeToString(suffix[:])
	_, err = db.Exec("CREATE DATABASE `" + name + "`")
	require.NoError(t, err)
	// Registered before the processes start, so it runs after they are gone.
	t.Cleanup(func() {
		_, err := db.Exec("DROP DATABASE `" + name + "`")
		require.NoError(t, err)
	})
	return strings.TrimRight(server, "/") + "/" + name
}

// TestClusterSharesItsWitnessLogInMariaDB: the instances of a cluster with --witness-log keep
// one log in MariaDB. Entries another appender adds to that database are served by every
// instance, under checkpoints that verify with the domain key; so is the log after one
// instance is killed.
func TestClusterSharesItsWitnessLogInMariaDB(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	logURL := mariaDBDatabase(t)
	keyFile, key := writeKeyFile(t)
	endpoint := "https://cluster.example"
	c := startCluster(t, 2, "--external-endpoint", endpoint, "--key-file", keyFile,
		"--witness-log", "--witness-log-mariadb-url", logURL)
	origin, err := witnesslog.OriginFor(endpoint)
	require.NoError(t, err)
	pub := key.Public().(ed25519.PublicKey)

	// A third appender on the same database, as another instance's witness would be.
	l, err := witnesslog.OpenMariaDB(ctx, witnesslog.Config{Origin: origin, Key: key, Logger: anchordtest.Logger(t)}, logURL)
	require.NoError(t, err)
	entries := [][]byte{[]byte(`{"id":"urn:uuid:c1"}`), []byte(`{"id":"urn:uuid:c2"}`), []byte(`{"id":"urn:uuid:c3"}`)}
	for _, e := range entries {
		_, err := l.Append(ctx, e)
		require.NoError(t, err)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, l.Close(cctx))

	check := func(n *clusterNode) {
		t.Helper()
		fetch, err := witnesslog.HTTPFetch(http.DefaultClient, "http://"+n.addr+"/log/")
		require.NoError(t, err)
		peer, err := witnesslog.NewPeer(origin, pub, fetch)
		require.NoError(t, err)
		cp, err := peer.Checkpoint(ctx)
		require.NoError(t, err, "instance %s", n.addr)
		require.EqualValues(t, len(entries), cp.Size, "instance %s", n.addr)
		for i, e := range entries {
			require.NoError(t, peer.VerifyInclusion(ctx, cp, uint64(i), e), "instance %s, entry %d", n.addr, i)
		}
	}
	for _, n := range c.nodes {
		check(n)
	}
	c.nodes[0].process().Signal(syscall.SIGKILL)
	_, err = c.nodes[0].process().Wait(10 * time.Second)
	require.NoError(t, err)
	check(c.nodes[1])
}
