package observer

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/anchord/anchord/internal/pubsub"
)

// anchorMessage is the anchor topic's payload: the sequence number of a completed anchor.
type anchorMessage struct {
	Seq int64 `json:"seq"`
}

// AnchorMessage returns the anchor topic message announcing that anchor seq completed.
func AnchorMessage(seq int64) *pubsub.Message {
	body, _ := json.Marshal(anchorMessage{Seq: seq})
	return &pubsub.Message{ID: "anchor-" + strconv.FormatInt(seq, 10), Body: body}
}

// Subscribe observes the anchors announced on the anchor topic with poolSize handlers until ctx
// is done (cluster mode; mq-observer-pool).
func (o *Observer) Subscribe(ctx context.Context, sub pubsub.Subscriber, poolSize int) error {
	err := sub.Subscribe(ctx, pubsub.TopicAnchor, poolSize, func(ctx context.Context, msg *pubsub.Message) error {
		var m anchorMessage
		if err := json.Unmarshal(msg.Body, &m); err != nil || m.Seq <= 0 {
			return pubsub.Permanent(fmt.Errorf("malformed anchor message %s", msg.ID))
		}
		if _, err := o.ObserveSeq(ctx, m.Seq); err != nil {
			return fmt.Errorf("observe anchor %d: %w", m.Seq, err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("consume anchors: %w", err)
	}
	return nil
}
