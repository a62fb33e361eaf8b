package amqppubsub

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/anchord/anchord/internal/pubsub"
)

// Headers the package keeps on AMQP messages. Application headers are plain string headers
// whose names do not start with "x-"; every "x-" header of a delivery (ours and RabbitMQ's
// x-death family) is hidden from handlers, and RabbitMQ's are dropped on every republish.
const (
	// hdrTopic is the destination topic of a message, wherever it currently waits.
	hdrTopic = "x-anchord-topic"
	// hdrAttempt is the number of the delivery the message is on (in a topic queue) or failed
	// (in the redelivery queue), or will be on (in a wait queue). Absent means 1.
	hdrAttempt = "x-anchord-attempt"
	// hdrStage is "wait" while a message sits in a wait queue; the redelivery router forwards
	// such a message when it expires instead of counting a failure.
	hdrStage = "x-anchord-stage"
	// hdrDeliverAt is when a waiting message is due, in Unix milliseconds.
	hdrDeliverAt = "x-anchord-deliver-at"
	// hdrFailure is the handler's error, set by the subscriber on a failure report.
	hdrFailure = "x-anchord-failure"
	// hdrPermanent marks a failure report of a pubsub.Permanent error.
	hdrPermanent = "x-anchord-permanent"
	// hdrHistory is the failure history, oldest first.
	hdrHistory = "x-anchord-history"
	// hdrReason and hdrParkedAt describe a parked message.
	hdrReason   = "x-anchord-reason"
	hdrParkedAt = "x-anchord-parked-at"

	stageWait = "wait"
)

// History limits.
const (
	// HistoryLimit bounds Parked.History: the most recent lines are kept.
	HistoryLimit = 20
	// failureLimit bounds one error text carried in a header, in bytes.
	failureLimit = 512
)

// newPublishing builds the AMQP message for a new publication of msg to topic.
func newPublishing(msg *pubsub.Message, topic string, now time.Time) amqp.Publishing {
	h := make(amqp.Table, len(msg.Headers)+2)
	for k, v := range msg.Headers {
		if !strings.HasPrefix(k, "x-") {
			h[k] = v
		}
	}
	h[hdrTopic] = topic
	h[hdrAttempt] = int32(1)
	return amqp.Publishing{
		Headers:      h,
		ContentType:  "application/octet-stream",
		DeliveryMode: amqp.Persistent,
		MessageId:    msg.ID,
		Timestamp:    now,
		// A copy: a publish whose caller's context ended goes on writing to a connection the
		// broker may have stopped reading, after the caller got its buffer back.
		Body: bytes.Clone(msg.Body),
	}
}

// republishing copies a delivery into a new publication: body, ID, timestamp, application
// headers and our own headers are kept, RabbitMQ's (x-death, x-first-death-*, …) are dropped,
// then set is applied (a nil value deletes the header).
func republishing(d *amqp.Delivery, set amqp.Table) amqp.Publishing {
	h := make(amqp.Table, len(d.Headers)+len(set))
	for k, v := range d.Headers {
		if !strings.HasPrefix(k, "x-") || strings.HasPrefix(k, "x-anchord-") {
			h[k] = v
		}
	}
	for k, v := range set {
		if v == nil {
			delete(h, k)
		} else {
			h[k] = v
		}
	}
	return amqp.Publishing{
		Headers:      h,
		ContentType:  d.ContentType,
		DeliveryMode: amqp.Persistent,
		MessageId:    d.MessageId,
		Timestamp:    d.Timestamp,
		Body:         d.Body,
	}
}

// message converts a delivery into the handler's view.
func message(d *amqp.Delivery, topic string) pubsub.Message {
	return pubsub.Message{
		ID:      d.MessageId,
		Headers: appHeaders(d.Headers),
		Body:    d.Body,
		Attempt: max(headerInt(d.Headers, hdrAttempt), 1),
		Topic:   topic,
	}
}

func appHeaders(t amqp.Table) map[string]string {
	h := map[string]string{}
	for k, v := range t {
		if strings.HasPrefix(k, "x-") {
			continue
		}
		if s, ok := v.(string); ok {
			h[k] = s
		} else {
			h[k] = fmt.Sprint(v)
		}
	}
	return h
}

// parked decodes a message of the parked queue.
func parked(d *amqp.Delivery) pubsub.Parked {
	topic := headerString(d.Headers, hdrTopic)
	msg := message(d, "")
	msg.Attempt = 0
	return pubsub.Parked{
		Message:  msg,
		Topic:    topic,
		Reason:   headerString(d.Headers, hdrReason),
		Attempts: headerInt(d.Headers, hdrAttempt),
		History:  headerStrings(d.Headers, hdrHistory),
		ParkedAt: time.UnixMilli(int64(headerInt(d.Headers, hdrParkedAt))),
	}
}

func headerString(t amqp.Table, key string) string {
	switch v := t[key].(type) {
	case string:
		return v
	case []byte:
		return string(v)
	default:
		return ""
	}
}

// headerInt reads an integer header of any AMQP integer type; absent or malformed gives 0.
func headerInt(t amqp.Table, key string) int {
	switch v := t[key].(type) {
	case int8:
		return int(v)
	case int16:
		return int(v)
	case int32:
		return int(v)
	case int64:
		return int(v)
	case int:
		return v
	case uint8:
		return int(v)
	case uint16:
		return int(v)
	case uint32:
		return int(v)
	default:
		return 0
	}
}

func headerBool(t amqp.Table, key string) bool {
	b, _ := t[key].(bool)
	return b
}

func headerStrings(t amqp.Table, key string) []string {
	raw, _ := t[key].([]any)
	out := make([]string, 0, len(raw))
	for _, v := range raw {
		switch s := v.(type) {
		case string:
			out = append(out, s)
		case []byte:
			out = append(out, string(s))
		}
	}
	return out
}

// appendHistory adds one line to the history header value, keeping the last HistoryLimit.
func appendHistory(history []string, now time.Time, attempt int, failure string) []any {
	history = append(history, fmt.Sprintf("%s attempt %d: %s", now.UTC().Format(time.RFC3339Nano), attempt, failure))
	if len(history) > HistoryLimit {
		history = history[len(history)-HistoryLimit:]
	}
	out := make([]any, len(history))
	for i, s := range history {
		out[i] = s
	}
	return out
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

func newID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(errors.Join(errors.New("crypto/rand failed"), err))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
