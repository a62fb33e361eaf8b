package witnesslog

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/transparency-dev/tessera"

	"github.com/anchord/anchord/internal/loop"
)

// Defaults of WitnessingConfig.
const (
	// WitnessTimeoutDefault bounds one round of cosigning: every witness of the policy is asked
	// at once, and the round ends when the policy is satisfied or this has passed.
	WitnessTimeoutDefault = 5 * time.Second
)

// cosignedFile holds the latest cosigned checkpoint in the POSIX storage's directory.
const cosignedFile = "cosigned-checkpoint"

// WitnessingConfig has the log's checkpoints cosigned by witnesses (c2sp.org/tlog-witness)
// before they are served.
type WitnessingConfig struct {
	// Policy is the witness policy in tessera's format (tessera.NewWitnessGroupFromPolicy):
	// witness lines with name, verifier key and URL, groups, and the quorum.
	Policy []byte
	// Timeout bounds one round of cosigning.
	Timeout time.Duration
	// FailOpen serves a checkpoint that did not get the quorum (with the cosignatures it got);
	// by default such a checkpoint is not served, and the one served before stays.
	FailOpen bool
	// Client makes the requests to the witnesses (cosigner.EndpointClient); required, with its
	// Transport set.
	Client *http.Client
}

// cosigning is what Log keeps to have its checkpoints cosigned.
type cosigning struct {
	cfg       WitnessingConfig
	group     tessera.WitnessGroup
	publish   func(ctx context.Context, size uint64, root []byte) ([]byte, error)
	store     cosignedStore
	witnesses int
}

// cosignedStore keeps the latest cosigned checkpoint: a file in the POSIX directory, a row in
// the MariaDB database.
type cosignedStore interface {
	// read returns the stored checkpoint, or an error wrapping fs.ErrNotExist.
	read(ctx context.Context) ([]byte, error)
	// advance stores raw, of tree size size, unless a checkpoint of a larger tree is stored.
	advance(ctx context.Context, raw []byte, size uint64) error
}

func newCosigning(l *Log, cfg WitnessingConfig, store cosignedStore) (*cosigning, error) {
	group, err := tessera.NewWitnessGroupFromPolicy(cfg.Policy)
	if err != nil {
		return nil, fmt.Errorf("witness policy: %w", err)
	}
	cfg.Timeout = cmp.Or(cfg.Timeout, WitnessTimeoutDefault)
	if cfg.Client == nil || cfg.Client.Transport == nil {
		return nil, errors.New("witness policy: a client with a transport is required to reach the witnesses")
	}
	cfg.Client = instrumentClient(cfg.Client, l.m)
	sig, err := newSigner(l.cfg.Origin, l.cfg.Key)
	if err != nil {
		return nil, err
	}
	// tessera's own witnessing, driven here rather than inside the storage's publication:
	// the MySQL storage asks the witnesses while it holds the tree-state row lock, which would
	// make every append wait for the slowest witness, and it reaches them only through
	// http.DefaultClient. The publisher signs the checkpoint of (size, root) again (Ed25519 is
	// deterministic: the same note) and asks the witnesses for it, giving each the consistency
	// proof from the size it last cosigned.
	opts := tessera.NewAppendOptions().WithCheckpointSigner(sig).
		WithWitnesses(group, &tessera.WitnessOptions{Timeout: cfg.Timeout, FailOpen: cfg.FailOpen})
	c := &cosigning{cfg: cfg, group: group, store: store, witnesses: len(group.Endpoints())}
	c.publish = opts.CheckpointPublisher(cosignedReader{LogReader: l.reader, store: store}, cfg.Client)
	return c, nil
}

// cosignedReader is the storage's reader whose checkpoint is the latest cosigned one: what
// tessera's witnessing reads to know from which size the witnesses last cosigned.
type cosignedReader struct {
	tessera.LogReader
	store cosignedStore
}

func (r cosignedReader) ReadCheckpoint(ctx context.Context) ([]byte, error) { return r.store.read(ctx) }

// CosignOutcome is what one round of cosigning did.
type CosignOutcome string

// Outcomes of Cosign.
const (
	// CosignUnchanged: the latest checkpoint is cosigned already.
	CosignUnchanged CosignOutcome = "unchanged"
	// CosignCosigned: the latest checkpoint got the quorum and is served.
	CosignCosigned CosignOutcome = "cosigned"
	// CosignFailedOpen: it did not, and is served anyway (FailOpen).
	CosignFailedOpen CosignOutcome = "failed_open"
	// CosignFailed: it did not, and the checkpoint served before stays.
	CosignFailed CosignOutcome = "failed"
)

// CosignResult is one round of Cosign.
type CosignResult struct {
	Outcome CosignOutcome
	// Size is the tree size of the checkpoint the round was about.
	Size     uint64
	Duration time.Duration
}

// Cosign has the log's latest checkpoint cosigned by the policy's witnesses, if it is not
// already, and serves it once the quorum is met (or regardless, with FailOpen). It is one run
// of the daemon's cosigning loop. Appends never wait for it.
func (l *Log) Cosign(ctx context.Context) (CosignResult, error) {
	c := l.cosigning
	if c == nil {
		return CosignResult{}, errors.New("witness log: no witness policy")
	}
	raw, err := l.reader.ReadCheckpoint(ctx)
	if err != nil {
		return CosignResult{}, fmt.Errorf("cosign: read the log's checkpoint: %w", err)
	}
	cp, err := openCheckpoint(raw, l.cfg.Origin, l.verifier)
	if err != nil {
		return CosignResult{}, fmt.Errorf("cosign: %w", err)
	}
	res := CosignResult{Size: cp.Size, Outcome: CosignUnchanged}
	if cur, err := c.store.read(ctx); err == nil {
		// A checkpoint served without the quorum (fail-open) is asked for again, so that the
		// witnesses' cosignatures follow once they answer, even if the log has not grown.
		if n, err := checkpointSize(cur); err == nil && n >= cp.Size && c.group.Satisfied(cur) {
			return res, nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return res, fmt.Errorf("cosign: read the cosigned checkpoint: %w", err)
	}
	start := time.Now()
	cosigned, err := c.publish(ctx, cp.Size, cp.Hash)
	res.Duration = time.Since(start)
	switch {
	case err != nil:
		res.Outcome = CosignFailed
	case !c.group.Satisfied(cosigned):
		res.Outcome = CosignFailedOpen
	default:
		res.Outcome = CosignCosigned
	}
	l.m.cosigns.WithLabelValues(string(res.Outcome)).Inc()
	if err != nil {
		return res, fmt.Errorf("cosign the checkpoint of size %d: %w", cp.Size, err)
	}
	if err := c.store.advance(ctx, cosigned, cp.Size); err != nil {
		return res, fmt.Errorf("cosign: store the cosigned checkpoint: %w", err)
	}
	if res.Outcome == CosignCosigned {
		l.m.cosignDuration.Observe(res.Duration.Seconds())
	} else {
		l.logger.WarnContext(ctx, "witness log checkpoint served without its witnesses' quorum (fail-open)", "size", cp.Size)
	}
	l.m.cosignedSize.Set(float64(cp.Size))
	return res, nil
}

// RunCosigner runs Cosign every interval until ctx ends; a failed round is logged and the
// next one tries again (the witnesses are asked from the size they last cosigned).
func (l *Log) RunCosigner(ctx context.Context) error {
	if l.cosigning == nil {
		return nil
	}
	loop.Every(ctx, l.cfg.CheckpointInterval, func(ctx context.Context) {
		rctx, cancel := context.WithTimeout(ctx, l.cosigning.cfg.Timeout+l.cfg.CheckpointInterval)
		defer cancel()
		res, err := l.Cosign(rctx)
		switch {
		case err != nil && ctx.Err() == nil:
			l.logger.WarnContext(ctx, "witness log checkpoint not cosigned", "size", res.Size, "outcome", res.Outcome, "error", err)
		case res.Outcome == CosignCosigned:
			l.logger.DebugContext(ctx, "witness log checkpoint cosigned", "size", res.Size, "duration", res.Duration)
		}
	})
	return nil
}

// posixCosigned keeps the cosigned checkpoint in a file of the log's directory, written as
// tessera writes its own: a temporary file synced, renamed into place, the directory synced.
type posixCosigned struct{ dir string }

func (p posixCosigned) read(context.Context) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(p.dir, cosignedFile))
	if err != nil {
		return nil, fmt.Errorf("read the cosigned checkpoint: %w", err)
	}
	return b, nil
}

func (p posixCosigned) advance(ctx context.Context, raw []byte, size uint64) error {
	if cur, err := p.read(ctx); err == nil {
		if n, err := checkpointSize(cur); err == nil && n > size {
			return nil
		}
	}
	f, err := os.CreateTemp(p.dir, cosignedFile+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(raw); err != nil {
		return errors.Join(err, f.Close())
	}
	if err := errors.Join(f.Sync(), f.Close()); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), filepath.Join(p.dir, cosignedFile)); err != nil {
		return err
	}
	d, err := os.Open(p.dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// MariaDB statements of the cosigned checkpoint (table anchord_cosigned_checkpoint). The note
// is assigned before the size, so that both compare against the old size.
const (
	selectCosignedSQL  = "SELECT `note` FROM `anchord_cosigned_checkpoint` WHERE `id` = 0"
	advanceCosignedSQL = "INSERT INTO `anchord_cosigned_checkpoint` (`id`, `size`, `note`) VALUES (0, ?, ?) " +
		"ON DUPLICATE KEY UPDATE `note` = IF(VALUES(`size`) >= `size`, VALUES(`note`), `note`), " +
		"`size` = IF(VALUES(`size`) >= `size`, VALUES(`size`), `size`)"
)

// mariaDBCosigned keeps the cosigned checkpoint in a row shared by every instance; it never
// moves to a smaller tree, whichever instance writes last.
type mariaDBCosigned struct{ db *sql.DB }

func (m mariaDBCosigned) read(ctx context.Context) ([]byte, error) {
	var b []byte
	err := m.db.QueryRowContext(ctx, selectCosignedSQL).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("read the cosigned checkpoint: %w", fs.ErrNotExist)
	}
	if err != nil {
		return nil, fmt.Errorf("read the cosigned checkpoint: %w", err)
	}
	return b, nil
}

func (m mariaDBCosigned) advance(ctx context.Context, raw []byte, size uint64) error {
	_, err := m.db.ExecContext(ctx, advanceCosignedSQL, size, raw)
	return err
}

// servedCheckpoint is the checkpoint the read API serves: the cosigned one under a witness
// policy, the storage's otherwise.
func (l *Log) servedCheckpoint(ctx context.Context) ([]byte, error) {
	if l.cosigning != nil {
		return l.cosigning.store.read(ctx)
	}
	return l.reader.ReadCheckpoint(ctx)
}

// instrumentClient counts the requests to each witness by status.
func instrumentClient(c *http.Client, m *metrics) *http.Client {
	cc := *c
	next := c.Transport
	cc.Transport = roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := next.RoundTrip(req)
		code := "error"
		if err == nil {
			code = strconv.Itoa(resp.StatusCode)
		}
		m.witnessRequests.WithLabelValues(req.URL.Host, code).Inc()
		return resp, err
	})
	return &cc
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
