package daemon

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/anchord/anchord/internal/cosigner"
	"github.com/anchord/anchord/internal/federation"
	"github.com/anchord/anchord/internal/httpapi"
	"github.com/anchord/anchord/internal/httpsig"
	"github.com/anchord/anchord/internal/logmonitor"
	"github.com/anchord/anchord/internal/peer"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/taskmgr"
	"github.com/anchord/anchord/internal/witnesslog"
)

// witnessLogDir is the directory of the embedded witness log under --data-dir.
const witnessLogDir = "log"

// openWitnessLog opens the domain's witness log when --witness-log is set: in MariaDB when
// --witness-log-mariadb-url is set (a cluster, whose instances share it), otherwise in files
// under the data dir. Its read API is served on the API listener under /log/, where WebFinger
// says it is; c.witnessLog keeps it for the witness, which appends before it answers.
//
// The log closes with the writers' stage: the inbox processors that append stop with the
// consumers, before it, and Close waits for a checkpoint covering every index it returned.
func (c *core) openWitnessLog(ctx context.Context) error {
	if !c.cfg.WitnessLog.Enabled {
		return nil
	}
	key, err := c.domainKey(ctx)
	if err != nil {
		return err
	}
	origin, err := witnesslog.OriginFor(c.cfg.ExternalEndpointURL())
	if err != nil {
		return fmt.Errorf("--external-endpoint: %w", err)
	}
	cfg := witnesslog.Config{Origin: origin, Key: key, CheckpointInterval: c.cfg.WitnessLog.CheckpointInterval, Logger: c.log("witnesslog"), Registerer: c.reg}
	if f := c.cfg.WitnessLog.WitnessesFile; f != "" {
		policy, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("--witness-log-witnesses: %w", err)
		}
		// The witnesses are endpoints the operator named, as the IPFS node and the ledger are,
		// not domains met through federation: their requests do not go through the peer client.
		cfg.Witnessing = &witnesslog.WitnessingConfig{
			Policy: policy, Timeout: c.cfg.WitnessLog.WitnessTimeout, FailOpen: c.cfg.WitnessLog.WitnessFailOpen,
			Client: cosigner.EndpointClient(c.cfg.WitnessLog.WitnessTimeout),
		}
	}
	var l *witnesslog.Log
	if dbURL := c.cfg.WitnessLog.MariaDBURL; dbURL != "" {
		if l, err = witnesslog.OpenMariaDB(ctx, cfg, dbURL); err != nil {
			return fmt.Errorf("--witness-log-mariadb-url: %w", err)
		}
	} else if l, err = witnesslog.OpenPOSIX(ctx, cfg, filepath.Join(c.cfg.DataDir, witnessLogDir)); err != nil {
		return fmt.Errorf("--witness-log: %w", err)
	}
	c.witnessLog = l
	c.routes = append(c.routes, func(mux httpapi.Router) { l.Register(mux) })
	if cfg.Witnessing != nil {
		// Every instance cosigns (a round that finds the latest checkpoint cosigned already asks
		// no witness); the loop stops with the consumers, before the log closes.
		c.sup.add(StageConsumers, "witness-log-cosigner", l.RunCosigner)
	}
	c.sup.onStop(StageWriters, "witness-log", func() {
		cctx, cancel := context.WithTimeout(context.Background(), c.cfg.ShutdownTimeout)
		defer cancel()
		if err := l.Close(cctx); err != nil {
			c.logger.Error("close the witness log", "error", err)
		}
	})
	c.logger.Info("witness log", "origin", origin, "url", c.cfg.ExternalEndpointURL()+federation.LogPath)
	return nil
}

// logMonitor registers the log consistency monitor (one instance at a time, under its task
// permit), which checks the logs of the domains we follow and of our witnesses, and the retry
// of its dead letters: retrying one accepts the log as it now is.
func (c *core) logMonitor(dir *logDirectory) error {
	fence := func(ctx context.Context, tx store.Executor, term int64) error {
		return c.tasks.Fence(ctx, tx, logmonitor.TaskID, term)
	}
	mcfg := logmonitor.Config{Interval: c.cfg.WitnessLog.MonitoringInterval, Logger: c.log("logmonitor"), Registerer: c.reg}
	if dir.witnesses != nil {
		// The witnesses of the policy are endpoints the operator named, read as the IPFS node and
		// the ledger are (not through the peer client): bounded in time and size like a peer.
		client := cosigner.EndpointClient(c.cfg.Federation.RequestTimeout)
		mcfg.WitnessPrefixes = dir.witnesses.Prefixes
		mcfg.WitnessFetch = func(prefix string) witnesslog.FetchFunc {
			f, err := witnesslog.HTTPFetch(client, prefix)
			if err != nil {
				return func(context.Context, string, int64) ([]byte, error) { return nil, err }
			}
			return f
		}
	}
	mon, err := logmonitor.New(mcfg, c.st, dir, fence)
	if err != nil {
		return err
	}
	c.retry[logmonitor.DeadLetterLogInconsistency] = logmonitor.RetryDeadLetter
	return c.tasks.Register(taskmgr.Task{ID: logmonitor.TaskID, Interval: mon.Interval(), Run: mon.RunTask})
}

// monitorWitnesses reads --witness-log-monitor-policy: nil when it is not set.
func (c *core) monitorWitnesses() (*witnesslog.Witnesses, error) {
	f := c.cfg.WitnessLog.MonitorPolicyFile
	if f == "" {
		return nil, nil
	}
	b, err := os.ReadFile(f)
	if err != nil {
		return nil, fmt.Errorf("--witness-log-monitor-policy: %w", err)
	}
	w, err := witnesslog.ParseWitnesses(b)
	if err != nil {
		return nil, fmt.Errorf("--witness-log-monitor-policy: %w", err)
	}
	return &w, nil
}

// relationshipPage is how many relationships one query of the directory reads.
const relationshipPage = 500

// logDirectory lists the witness logs to watch: those of the domains we follow and of our
// witnesses that advertise one, with the key of their actor documents. A domain whose
// WebFinger or actor cannot be read this time is left out of this run, with a warning: one
// unreachable domain must not stop the others' checks.
type logDirectory struct {
	st     store.Store
	svc    *federation.Service
	client *peer.Client
	logger *slog.Logger
	// witnesses, when set (--witness-log-monitor-policy), is the quorum every log's checkpoints
	// must satisfy before a monitor accepts them.
	witnesses *witnesslog.Witnesses
}

func (d *logDirectory) Logs(ctx context.Context) ([]logmonitor.Log, error) {
	return d.logsOf(ctx, store.RelationshipFollowing, store.RelationshipWitness)
}

// logsOf lists the logs of the domains in accepted relationships of the given kinds.
func (d *logDirectory) logsOf(ctx context.Context, kinds ...string) ([]logmonitor.Log, error) {
	var actors []string
	seen := map[string]bool{}
	for _, kind := range kinds {
		for offset := int64(0); ; offset += relationshipPage {
			page, err := d.st.RelationshipList(ctx, store.RelationshipListParams{
				Kind: kind, Status: store.RelationshipAccepted, Offset: offset, Limit: relationshipPage,
			})
			if err != nil {
				return nil, fmt.Errorf("list %s relationships: %w", kind, err)
			}
			for _, r := range page {
				if !seen[r.Actor] {
					seen[r.Actor] = true
					actors = append(actors, r.Actor)
				}
			}
			if len(page) < relationshipPage {
				break
			}
		}
	}
	var logs []logmonitor.Log
	for _, actor := range actors {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		l, ok, err := d.logOf(ctx, actor)
		if err != nil {
			d.logger.WarnContext(ctx, "cannot watch this domain's witness log this time", "actor", actor, "error", err)
			continue
		}
		if ok {
			logs = append(logs, l)
		}
	}
	return logs, nil
}

// logOf returns the log of the domain of actor; ok is false when it keeps none we can read.
func (d *logDirectory) logOf(ctx context.Context, actor string) (logmonitor.Log, bool, error) {
	pl, ok, err := d.svc.PeerLog(ctx, actor)
	if err != nil || !ok {
		return logmonitor.Log{}, false, err
	}
	key, err := d.actorKey(ctx, actor)
	if err != nil {
		return logmonitor.Log{}, false, err
	}
	fetch := func(ctx context.Context, path string, limit int64) ([]byte, error) {
		body, err := d.client.Fetch(ctx, pl.URL+"/"+path, limit)
		if peer.IsNotFound(err) {
			return nil, fmt.Errorf("%w: %w", fs.ErrNotExist, err)
		}
		return body, err
	}
	l := logmonitor.Log{Domain: actor, Origin: pl.Origin, Key: key, Fetch: fetch}
	if d.witnesses != nil {
		l.Quorum = d.witnesses.Quorum
	}
	return l, true, nil
}

// actorKey is the key of the actor's document, the domain key that signs its checkpoints.
func (d *logDirectory) actorKey(ctx context.Context, actor string) (ed25519.PublicKey, error) {
	a, err := d.client.Actor(ctx, actor)
	if err != nil {
		return nil, err
	}
	if a.PublicKey == nil {
		return nil, errors.New("the actor document has no public key")
	}
	key, err := httpsig.DecodePublicKeyPEM(a.PublicKey.PublicKeyPem)
	if err != nil {
		return nil, fmt.Errorf("the actor's public key: %w", err)
	}
	return key, nil
}

// peerLogs gives the proof monitor the log of a witness, found and keyed as the log
// consistency monitor finds its logs.
type peerLogs struct{ dir *logDirectory }

func (p peerLogs) PeerLog(ctx context.Context, actor string) (*witnesslog.Peer, string, bool, error) {
	l, ok, err := p.dir.logOf(ctx, actor)
	if err != nil || !ok {
		return nil, "", ok, err
	}
	peer, err := witnesslog.NewPeer(l.Origin, l.Key, l.Fetch)
	if err != nil {
		return nil, "", false, err
	}
	return peer.WithQuorum(l.Quorum), l.Origin, true, nil
}
