package intake

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/anchord/anchord/internal/opqueue"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/jsontree"
)

// ErrRetryLater wraps every failure that is not the request's fault: the queue is full or the
// operation could not be stored. The request was not accepted; the client should retry (503).
var ErrRetryLater = errors.New("operation not accepted; retry later")

// Intake's own 400 codes, alongside the sidetree codes.
const (
	// CodeOperationPending refuses a second operation for a DID that has one pending; it is the
	// reference implementation's code for the same refusal.
	CodeOperationPending sidetree.Code = "queueing_multiple_operations_per_did_not_allowed"
	// CodeOriginNotAllowed: a create or recover declares an anchorOrigin outside
	// Config.AllowedOrigins.
	CodeOriginNotAllowed sidetree.Code = "anchor_origin_not_allowed"
)

// AllowAllOrigins in Config.AllowedOrigins accepts any declared anchorOrigin (Orb's "*").
const AllowAllOrigins = "*"

// Queue is where accepted operations go.
type Queue interface {
	Add(ctx context.Context, op opqueue.NewOp) error
}

// StateFunc returns a DID's current anchored state (nil: no create anchored). It MUST see every
// operation whose index rows were committed before it was called (observer.Resolver.State).
type StateFunc func(ctx context.Context, suffix string) (*sidetree.State, error)

// Config configures a Service.
type Config struct {
	Profile sidetree.Profile
	// AllowedOrigins lists the anchorOrigin values a create or recover may declare, compared
	// exactly, as Orb's --allowed-origins does; AllowAllOrigins accepts any. A request that
	// declares none is always accepted. Empty: no declared origin is accepted.
	AllowedOrigins []string
	// CreateStateFunc, if set, answers the state read of a create in place of the StateFunc.
	// It MUST answer exactly what the StateFunc would (observer.Resolver.CreateState only reads
	// less).
	CreateStateFunc StateFunc
	// AcceptedFunc, if set, is told of each operation once it is queued, with the anchor origin
	// its DID declares ("" for a create, which declares its own): the did:orb profile's store of
	// unpublished operations (observer.Unpublished). It must not block.
	AcceptedFunc func(op *sidetree.Operation, opID, anchorOrigin string)
	Logger       *slog.Logger
	Registerer   prometheus.Registerer
}

// Reservations hold each DID for its one pending operation: *Pending in memory (embedded, one
// process), *SharedPending in the database (a cluster, where any instance may take a request).
//
// A reservation MUST last until its operation's index rows are committed (or the operation is
// parked or dropped), and MUST NOT end before that commit: intake reads the state an operation
// is checked against only once it holds the DID, so a successful Hold guarantees that every
// earlier operation of the DID is in what the StateFunc reads.
type Reservations interface {
	// Hold reserves suffix for operation opID; false while another operation holds it. create
	// says the operation is a create.
	Hold(ctx context.Context, suffix string, create bool, opID string) (bool, error)
	// Drop ends opID's reservation of suffix (the operation was not accepted after all).
	Drop(ctx context.Context, suffix, opID string)
}

// Service accepts operations.
type Service struct {
	cfg     Config
	origins map[string]bool
	q       Queue
	state   StateFunc
	pending Reservations
	m       *metrics
}

// New returns a Service.
func New(cfg Config, q Queue, state StateFunc, pending Reservations) (*Service, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Registerer == nil {
		cfg.Registerer = prometheus.NewRegistry()
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	origins := make(map[string]bool, len(cfg.AllowedOrigins))
	for _, o := range cfg.AllowedOrigins {
		origins[o] = true
	}
	return &Service{cfg: cfg, origins: origins, q: q, state: state, pending: pending, m: m}, nil
}

// Submit validates and queues one operation request. It returns the response body: for a
// create, the unpublished resolution result; nil otherwise. A rejection is a *sidetree.Error
// (HTTP 400); an error wrapping ErrRetryLater means try later (503).
func (s *Service) Submit(ctx context.Context, body []byte) ([]byte, error) {
	op, err := sidetree.ParseOperation(body, s.cfg.Profile)
	if err == nil {
		err = s.checkOrigin(op)
	}
	if err != nil {
		s.m.rejected.WithLabelValues(string(sidetree.CodeOf(err))).Inc()
		return nil, err
	}
	// The DID is reserved before its state is read, never after: a state read first could
	// predate the index commit that ended the previous operation's reservation, and the
	// operation would be checked against the state that operation changed.
	opID := opqueue.OpIDOf(op.Request)
	held, err := s.pending.Hold(ctx, op.Suffix, op.Type == sidetree.OperationCreate, opID)
	if err != nil {
		return nil, fmt.Errorf("%w: reserve DID: %w", ErrRetryLater, err)
	}
	if !held {
		s.m.rejected.WithLabelValues(string(CodeOperationPending)).Inc()
		return nil, sidetree.Errorf(CodeOperationPending, "DID %s already has an operation pending; retry after it is anchored", op.Suffix)
	}
	resp, err := s.accept(ctx, op, opID)
	if err != nil {
		s.pending.Drop(context.WithoutCancel(ctx), op.Suffix, opID)
		return nil, err
	}
	s.m.accepted.WithLabelValues(string(op.Type)).Inc()
	return resp, nil
}

// checkOrigin refuses an anchorOrigin this domain does not accept: a DID whose declared origin
// is another domain is that domain's to anchor.
func (s *Service) checkOrigin(op *sidetree.Operation) error {
	if op.AnchorOrigin == "" || s.origins[AllowAllOrigins] || s.origins[op.AnchorOrigin] {
		return nil
	}
	return sidetree.Errorf(CodeOriginNotAllowed, "anchorOrigin %s is not an allowed origin of this domain", jsontree.QuoteExcerpt(op.AnchorOrigin))
}

// Reserve holds suffix for operation opID when it bypasses Submit (a retried dead letter): false
// if the DID already has an operation pending, or the reservation cannot be stored.
func (s *Service) Reserve(ctx context.Context, suffix, opID string) bool {
	held, err := s.pending.Hold(ctx, suffix, false, opID)
	return err == nil && held
}

// Unreserve ends opID's reservation of suffix (the retry did not go through).
func (s *Service) Unreserve(ctx context.Context, suffix, opID string) {
	s.pending.Drop(ctx, suffix, opID)
}

// accept checks op against its DID's current state and queues it; the caller holds the DID.
func (s *Service) accept(ctx context.Context, op *sidetree.Operation, opID string) ([]byte, error) {
	state := s.state
	if op.Type == sidetree.OperationCreate && s.cfg.CreateStateFunc != nil {
		state = s.cfg.CreateStateFunc
	}
	st, err := state(ctx, op.Suffix)
	if err != nil {
		return nil, fmt.Errorf("%w: read DID state: %w", ErrRetryLater, err)
	}
	if err := st.Check(op); err != nil {
		s.m.rejected.WithLabelValues(string(sidetree.CodeOf(err))).Inc()
		return nil, err
	}
	var resp []byte // a create's response; nil otherwise
	if op.Type == sidetree.OperationCreate {
		resp, err = sidetree.CreateResponse(s.cfg.Profile, op)
	} else {
		err = st.CheckLimits(s.cfg.Profile, op)
	}
	if err != nil {
		s.m.rejected.WithLabelValues(string(sidetree.CodeOf(err))).Inc()
		return nil, err
	}
	if err := s.q.Add(ctx, opqueue.NewOp{OpID: opID, Suffix: op.Suffix, Type: string(op.Type), Request: op.Request, Parsed: op}); err != nil {
		if errors.Is(err, opqueue.ErrPushback) {
			s.m.rejected.WithLabelValues("backlog").Inc()
		}
		return nil, fmt.Errorf("%w: %w", ErrRetryLater, err)
	}
	if s.cfg.AcceptedFunc != nil {
		origin := ""
		if st != nil {
			origin = st.AnchorOrigin
		}
		s.cfg.AcceptedFunc(op, opID, origin)
	}
	return resp, nil
}
