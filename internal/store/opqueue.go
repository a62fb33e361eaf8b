package store

import "time"

// QueuedOp is a row of op_queue: an accepted operation not yet anchored.
type QueuedOp struct {
	ID int64
	// OpID identifies the operation across redeliveries and reposts (the message id in cluster
	// mode); inserting an OpID twice is a no-op, which makes redelivered messages idempotent.
	OpID       string
	Suffix     string
	Type       string
	Request    []byte
	InstanceID string
	// Attempts counts the batches this operation failed in.
	Attempts    int
	History     []string
	EnqueuedAt  time.Time
	AvailableAt time.Time
	ExpiresAt   time.Time
}

// OpQueueInsertParams is one operation to queue.
type OpQueueInsertParams struct {
	OpID        string
	Suffix      string
	Type        string
	Request     []byte
	InstanceID  string
	Attempts    int
	History     []string
	AvailableAt time.Time
	// Lifespan sets expires_at = database now + Lifespan.
	Lifespan time.Duration
}

// OpQueueListParams pages through one instance's queued operations in id order.
type OpQueueListParams struct {
	InstanceID string
	AfterID    int64
	Limit      int
}

// OpQueueDeleteParams deletes operations by id, fenced by the owning instance: rows owned by
// another instance (reposted after this one was presumed dead) are not deleted, and the caller
// learns it from the count.
type OpQueueDeleteParams struct {
	IDs        []int64
	InstanceID string
}

// OpQueueRetryParams records a failed batch attempt for one operation.
type OpQueueRetryParams struct {
	ID          int64
	InstanceID  string
	Attempts    int
	History     []string
	AvailableAt time.Time
}

// DeadLetter is a parked operation, message or ledger batch: it exhausted its retries or failed
// permanently, and waits for an operator (list, retry, drop).
type DeadLetter struct {
	ID        int64
	Kind      string // DeadLetterOperation, DeadLetterMessage, DeadLetterLedgerBatch
	Ref       string // operation id, message id or batch id
	Topic     string // where a retry sends it
	Payload   []byte
	Reason    string
	Attempts  int
	History   []string
	CreatedAt time.Time
}

// Dead-letter kinds.
const (
	DeadLetterOperation   = "operation"
	DeadLetterMessage     = "message"
	DeadLetterLedgerBatch = "ledger_batch"
)

// DeadLetterListParams pages through dead letters in id order.
type DeadLetterListParams struct {
	Kind    string // empty: every kind
	AfterID int64
	Limit   int
}
