package federation

import (
	"context"
	"encoding/json"
	"log/slog"

	"golang.org/x/sync/errgroup"

	"github.com/anchord/anchord/internal/pubsub"
)

// wakeBacklog bounds the wake-ups waiting to be published; beyond it they are dropped, and the
// loops' poll finds the work instead.
const wakeBacklog = 1024

// wakeMessage is the body of a wake-up on the activity topics: which outbox activities or inbox
// rows became due. The rows, not the messages, are the truth; the ids are for the logs.
type wakeMessage struct {
	IDs []string `json:"ids"`
}

// waker tells the deliverers and inbox processors that work is due: in this process through a
// channel, and in a cluster also through the activity topics, so that any instance starts at
// once. Its channels are owned by the waker and never closed.
type waker struct {
	outboxCh chan struct{}
	inboxCh  chan struct{}
	broker   pubsub.PubSub
	logger   *slog.Logger
	// publish holds wake-ups for the broker; drained by Run.
	publish chan published
}

type published struct {
	topic string
	id    string
}

func newWaker(broker pubsub.PubSub, logger *slog.Logger) *waker {
	return &waker{
		outboxCh: make(chan struct{}, 1), inboxCh: make(chan struct{}, 1),
		broker: broker, logger: logger, publish: make(chan published, wakeBacklog),
	}
}

func (w *waker) outbox(id string) { w.signal(w.outboxCh, pubsub.TopicActivityOutbox, id) }

func (w *waker) inbox(id string) { w.signal(w.inboxCh, pubsub.TopicActivityInbox, id) }

func (w *waker) signal(ch chan struct{}, topic, id string) {
	select {
	case ch <- struct{}{}:
	default:
	}
	if w.broker == nil {
		return
	}
	select {
	case w.publish <- published{topic: topic, id: id}:
	default:
	}
}

// Run, in a cluster, publishes this instance's wake-ups and turns other instances' into local
// ones until ctx is done. Without a broker it returns at once.
func (w *waker) Run(ctx context.Context) error {
	if w.broker == nil {
		return nil
	}
	g, ctx := errgroup.WithContext(ctx)
	for topic, ch := range map[string]chan struct{}{pubsub.TopicActivityOutbox: w.outboxCh, pubsub.TopicActivityInbox: w.inboxCh} {
		g.Go(func() error {
			return w.broker.Subscribe(ctx, topic, 1, func(context.Context, *pubsub.Message) error {
				select {
				case ch <- struct{}{}:
				default:
				}
				return nil
			})
		})
	}
	g.Go(func() error {
		for {
			select {
			case <-ctx.Done():
				return nil
			case p := <-w.publish:
				body, _ := json.Marshal(wakeMessage{IDs: []string{p.id}})
				if err := w.broker.Publish(ctx, p.topic, &pubsub.Message{Body: body}); err != nil && ctx.Err() == nil {
					// The poll of the other instances finds the work all the same.
					w.logger.DebugContext(ctx, "publish wake-up", "topic", p.topic, "error", err)
				}
			}
		}
	})
	return g.Wait()
}

// RunWaker carries wake-ups between the instances of a cluster (Config.Broker) until ctx is
// done; without a broker it returns at once.
func (s *Service) RunWaker(ctx context.Context) error { return s.wake.Run(ctx) }
