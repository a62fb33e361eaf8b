package daemon

import (
	"context"

	"github.com/anchord/anchord/internal/opqueue"
)

// submitterOnly is the shape of a process that runs only the ledger submitters and the status
// poller (--roles submitter), so they scale apart from the API: no intake, queue or batch
// writer. The operations of an anchor the ledger rejects go back as rows of the queue that will
// take them: with a broker, rows of this process, which has no task entry, so the op-queue
// monitor reposts them; without one, rows of the single API instance, whose Watch finds them.
func submitterOnly(ctx context.Context, c *core) error {
	owner := embeddedInstanceID
	if c.ps != nil {
		owner = c.instanceID
	}
	rows := opqueue.Rows{InstanceID: owner, Lifespan: c.cfg.OpQueueOperationLifespan}
	_, err := c.ledgerBackend(ctx, rows.GiveBackTx)
	return err
}
