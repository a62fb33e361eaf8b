package amqppubsub

import (
	"fmt"
	"slices"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/anchord/anchord/internal/pubsub"
)

// topology names every exchange and queue of one prefix and declares them.
type topology struct {
	exchange   string
	queueType  QueueType
	queues     map[string]string // topic → queue
	topics     map[string]string // queue → topic
	redelivery string
	parked     string
	tiers      []time.Duration // wait tiers, ascending
}

func newTopology(cfg Config) *topology {
	t := &topology{
		exchange:   cfg.Prefix,
		queueType:  cfg.QueueType,
		queues:     make(map[string]string, len(cfg.Topics)),
		topics:     make(map[string]string, len(cfg.Topics)),
		redelivery: cfg.Prefix + ".redelivery",
		parked:     cfg.Prefix + ".parked",
		tiers:      waitTiers(cfg.Redelivery, cfg.MaxWaitTiers),
	}
	for _, topic := range cfg.Topics {
		q := cfg.Prefix + "." + topic
		t.queues[topic] = q
		t.topics[q] = topic
	}
	return t
}

// waitTiers returns the distinct waits of the schedule, Delay(2) … Delay(MaxAttempts−1),
// truncated to milliseconds (the unit of x-message-ttl; truncated, not rounded, so that a tier is
// never longer than its wait and tierFor picks it), ascending. A redelivery then waits in
// exactly one tier. Past max tiers it keeps max tiers spread over the range, always keeping the
// shortest and longest; a wait between two kept tiers is then made of several hops (see
// tierFor). There is always at least one tier, so that delayed publish works with any schedule.
func waitTiers(r pubsub.RedeliveryConfig, maxTiers int) []time.Duration {
	var tiers []time.Duration
	for n := 2; n < r.MaxAttempts; n++ {
		d := r.Delay(n).Truncate(time.Millisecond)
		if d > 0 && !slices.Contains(tiers, d) {
			tiers = append(tiers, d)
		}
	}
	if len(tiers) == 0 {
		tiers = append(tiers, max(r.InitialInterval.Truncate(time.Millisecond), time.Millisecond))
	}
	slices.Sort(tiers)
	if len(tiers) > maxTiers {
		kept := make([]time.Duration, 0, maxTiers)
		for i := range maxTiers {
			idx := 0
			if maxTiers > 1 {
				idx = i * (len(tiers) - 1) / (maxTiers - 1)
			}
			kept = append(kept, tiers[idx])
		}
		tiers = slices.Compact(kept)
	}
	return tiers
}

// tierFor returns the wait tier for a remaining wait: the longest tier not longer than it, or
// the shortest tier when every tier is longer (the message is then late by less than the
// shortest tier, never early).
func (t *topology) tierFor(remaining time.Duration) time.Duration {
	best := t.tiers[0]
	for _, d := range t.tiers {
		if d <= remaining {
			best = d
		}
	}
	return best
}

// waitQueue names the wait queue of a tier. The ".delay." infix marks the quorum tiers with
// at-least-once dead-lettering; older classic tiers were named ".wait." and, once empty, can be
// deleted by hand.
func (t *topology) waitQueue(tier time.Duration) string {
	return fmt.Sprintf("%s.delay.%dms", t.exchange, tier.Milliseconds())
}

// topicOf maps a queue name back to its topic.
func (t *topology) topicOf(queue string) (string, bool) {
	topic, ok := t.topics[queue]
	return topic, ok
}

// queueNames lists every queue, for deletion.
func (t *topology) queueNames() []string {
	names := []string{t.redelivery, t.parked}
	for _, q := range t.queues {
		names = append(names, q)
	}
	for _, d := range t.tiers {
		names = append(names, t.waitQueue(d))
	}
	slices.Sort(names)
	return names
}

func (t *topology) queueArgs(extra amqp.Table) amqp.Table {
	args := amqp.Table{"x-queue-type": string(t.queueType)}
	if t.queueType == QueueClassic {
		args["x-queue-version"] = int32(2)
	}
	for k, v := range extra {
		args[k] = v
	}
	return args
}

// declare declares the exchange and every queue and binding; it is idempotent and runs on every
// new connection, so a broker that lost its definitions gets them back.
func (t *topology) declare(ch *amqp.Channel) error {
	if err := ch.ExchangeDeclare(t.exchange, amqp.ExchangeDirect, true, false, false, false, nil); err != nil {
		return fmt.Errorf("declare exchange %s: %w", t.exchange, err)
	}
	toRedelivery := amqp.Table{
		"x-dead-letter-exchange":    t.exchange,
		"x-dead-letter-routing-key": t.redelivery,
	}
	queues := []struct {
		name string
		args amqp.Table
	}{
		{t.redelivery, t.queueArgs(nil)},
		{t.parked, t.queueArgs(nil)},
	}
	topics := make([]string, 0, len(t.queues))
	for topic := range t.queues {
		topics = append(topics, topic)
	}
	slices.Sort(topics)
	for _, topic := range topics {
		queues = append(queues, struct {
			name string
			args amqp.Table
		}{t.queues[topic], t.queueArgs(toRedelivery)})
	}
	for _, d := range t.tiers {
		// A message leaves a wait tier only by dead-lettering when its TTL expires. Classic
		// queues dead-letter at most once, so a broker crash at that moment could lose it;
		// quorum queues with the at-least-once strategy keep the message until the target
		// queue confirmed it (which requires reject-publish overflow). So the tiers are quorum
		// queues whatever the topic queues are.
		args := amqp.Table{
			"x-queue-type":              string(QueueQuorum),
			"x-dead-letter-strategy":    "at-least-once",
			"x-overflow":                "reject-publish",
			"x-dead-letter-exchange":    t.exchange,
			"x-dead-letter-routing-key": t.redelivery,
		}
		args["x-message-ttl"] = d.Milliseconds()
		queues = append(queues, struct {
			name string
			args amqp.Table
		}{t.waitQueue(d), args})
	}
	for _, q := range queues {
		if _, err := ch.QueueDeclare(q.name, true, false, false, false, q.args); err != nil {
			return fmt.Errorf("declare queue %s: %w", q.name, err)
		}
		if err := ch.QueueBind(q.name, q.name, t.exchange, false, nil); err != nil {
			return fmt.Errorf("bind queue %s: %w", q.name, err)
		}
	}
	return nil
}

// remove deletes every queue and the exchange (tests and benchmarks).
func (t *topology) remove(ch *amqp.Channel) error {
	for _, q := range t.queueNames() {
		if _, err := ch.QueueDelete(q, false, false, false); err != nil {
			return fmt.Errorf("delete queue %s: %w", q, err)
		}
	}
	if err := ch.ExchangeDelete(t.exchange, false, false); err != nil {
		return fmt.Errorf("delete exchange %s: %w", t.exchange, err)
	}
	return nil
}

// RemoveTopology deletes the exchange and every queue that instances configured like cfg declare
// (its prefix, topics and redelivery tiers), messages included. It is for tests and for retiring
// a prefix; never call it while instances use the prefix.
func RemoveTopology(cfg Config) error {
	cfg = cfg.withDefaults()
	conn, err := amqp.DialConfig(cfg.URL, amqp.Config{Dial: amqp.DefaultDial(cfg.DialTimeout)})
	if err != nil {
		return fmt.Errorf("remove topology: %w", err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return fmt.Errorf("remove topology: %w", err)
	}
	defer ch.Close()
	if err := newTopology(cfg).remove(ch); err != nil {
		return fmt.Errorf("remove topology: %w", err)
	}
	return nil
}
