// Package deadletter is the operator's side of the durability chain's last link: everything
// that exhausted its retries or failed permanently — an operation, a broker message, a ledger
// batch — is parked in dead_letters with its reason and history, and this package lists, retries
// and drops those records.
//
// Retrying puts the item back where it came from: an operation into the operation queue (in the
// same transaction that deletes its record), a message onto its topic (confirmed, then the record
// is deleted; the message keeps its id, so a crash in between yields a duplicate the consumers
// already tolerate, never a loss).
package deadletter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/anchord/anchord/internal/opqueue"
	"github.com/anchord/anchord/internal/pubsub"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/store"
)

// Errors of Retry.
var (
	// ErrNotFound: no dead letter has that id.
	ErrNotFound = errors.New("dead letter not found")
	// ErrBusy: the item cannot be retried now (its DID has an operation pending); try later.
	ErrBusy = errors.New("dead letter cannot be retried now")
	// ErrNotRetryable: the record cannot be put back (unknown kind, unreadable payload).
	ErrNotRetryable = errors.New("dead letter cannot be retried")
)

// RequeueFunc queues operations again, running also in the same transaction
// (opqueue.Queue.Restore in embedded mode).
type RequeueFunc func(ctx context.Context, ops []opqueue.NewOp, also func(ctx context.Context, tx store.Executor) error) error

// Reserver holds a DID for the operation of a retried dead letter, as intake does for a new one
// (intake.Service).
type Reserver interface {
	// Reserve holds suffix for opID; false if the DID already has an operation pending.
	Reserve(ctx context.Context, suffix, opID string) bool
	// Unreserve ends opID's reservation of suffix.
	Unreserve(ctx context.Context, suffix, opID string)
}

// KindRetryFunc puts a parked item of another component back where it came from, inside tx, the
// transaction that deletes its dead letter: both happen or neither does.
type KindRetryFunc func(ctx context.Context, tx store.Executor, d store.DeadLetter) error

// Config configures a Service.
type Config struct {
	Profile sidetree.Profile
	// Retry holds the retry paths of the kinds other components park (an IPFS add, an activity
	// delivery), by kind.
	Retry  map[string]KindRetryFunc
	Logger *slog.Logger
}

// Service lists, retries and drops dead letters.
type Service struct {
	cfg       Config
	st        store.Store
	requeue   RequeueFunc
	reserver  Reserver
	publisher pubsub.Publisher
}

// New returns a Service. publisher may be nil when no broker is configured (message dead
// letters then cannot exist).
func New(cfg Config, st store.Store, requeue RequeueFunc, reserver Reserver, publisher pubsub.Publisher) *Service {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{cfg: cfg, st: st, requeue: requeue, reserver: reserver, publisher: publisher}
}

// List pages through dead letters.
func (s *Service) List(ctx context.Context, p store.DeadLetterListParams) ([]store.DeadLetter, error) {
	return s.st.DeadLetterList(ctx, p)
}

// Retry puts a dead letter back where it came from and deletes the record.
func (s *Service) Retry(ctx context.Context, id int64) error {
	d, err := s.st.DeadLetterGet(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("retry %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("retry %d: %w", id, err)
	}
	switch d.Kind {
	case store.DeadLetterOperation:
		err = s.retryOperation(ctx, d)
	case store.DeadLetterMessage:
		err = s.retryMessage(ctx, d)
	default:
		retry, ok := s.cfg.Retry[d.Kind]
		if !ok {
			err = fmt.Errorf("%w: kind %q has no retry path here", ErrNotRetryable, d.Kind)
			break
		}
		err = s.st.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
			if err := retry(ctx, tx, d); err != nil {
				return err
			}
			return tx.DeadLetterDelete(ctx, d.ID)
		})
	}
	if err != nil {
		return fmt.Errorf("retry %d: %w", id, err)
	}
	s.cfg.Logger.InfoContext(ctx, "dead letter retried", "id", id, "kind", d.Kind, "ref", d.Ref)
	return nil
}

func (s *Service) retryOperation(ctx context.Context, d store.DeadLetter) error {
	op, err := sidetree.ParseOperation(d.Payload, s.cfg.Profile)
	if err != nil {
		return fmt.Errorf("%w: stored operation no longer valid: %w", ErrNotRetryable, err)
	}
	if !s.reserver.Reserve(ctx, op.Suffix, d.Ref) {
		return fmt.Errorf("%w: DID %s has an operation pending", ErrBusy, op.Suffix)
	}
	err = s.requeue(ctx, []opqueue.NewOp{{OpID: d.Ref, Suffix: op.Suffix, Type: string(op.Type), Request: op.Request, Parsed: op}},
		func(ctx context.Context, tx store.Executor) error { return tx.DeadLetterDelete(ctx, d.ID) })
	if err != nil {
		s.reserver.Unreserve(context.WithoutCancel(ctx), op.Suffix, d.Ref)
		return err
	}
	return nil
}

// Envelope is how a parked broker message is stored in a dead letter's payload.
type Envelope struct {
	ID      string            `json:"id"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    []byte            `json:"body"`
}

func (s *Service) retryMessage(ctx context.Context, d store.DeadLetter) error {
	if s.publisher == nil {
		return fmt.Errorf("%w: no message broker configured", ErrNotRetryable)
	}
	var env Envelope
	if err := json.Unmarshal(d.Payload, &env); err != nil {
		return fmt.Errorf("%w: unreadable message envelope: %w", ErrNotRetryable, err)
	}
	msg := &pubsub.Message{ID: env.ID, Headers: env.Headers, Body: env.Body}
	if err := s.publisher.Publish(ctx, d.Topic, msg); err != nil {
		return fmt.Errorf("republish to %s: %w", d.Topic, err)
	}
	if err := s.st.DeadLetterDelete(ctx, d.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	return nil
}

// Drop deletes a dead letter for good.
func (s *Service) Drop(ctx context.Context, id int64) error {
	err := s.st.DeadLetterDelete(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("drop %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("drop %d: %w", id, err)
	}
	s.cfg.Logger.WarnContext(ctx, "dead letter dropped by an operator", "id", id)
	return nil
}

// ParkFunc returns the pubsub.ParkFunc that records parked broker messages as dead letters.
func ParkFunc(st store.Executor) pubsub.ParkFunc {
	return func(ctx context.Context, p pubsub.Parked) error {
		payload, err := json.Marshal(Envelope{ID: p.Message.ID, Headers: p.Message.Headers, Body: p.Message.Body})
		if err != nil {
			return fmt.Errorf("park message %s: %w", p.Message.ID, err)
		}
		_, err = st.DeadLetterInsert(ctx, store.DeadLetter{
			Kind: store.DeadLetterMessage, Ref: p.Message.ID, Topic: p.Topic, Payload: payload,
			Reason: p.Reason, Attempts: p.Attempts, History: p.History,
		})
		return err
	}
}
