// Package amqppubsub is the RabbitMQ implementation of the pubsub contract (cluster mode), on
// github.com/rabbitmq/amqp091-go. It passes pubsubtest.Exercise on classic and quorum queues.
//
// # Nomenclature
//
// One durable direct exchange named after the prefix (default "anchord"). Every queue is durable,
// bound to that exchange with its own name as routing key, and of Config.QueueType (classic
// queues are version 2):
//
//	topic T             queue <prefix>.T            DLX → <prefix>.redelivery
//	redelivery          queue <prefix>.redelivery   consumed by Run (the router)
//	wait tier of d      queue <prefix>.delay.<d>ms  quorum, x-message-ttl d, at-least-once DLX → <prefix>.redelivery
//	parked              queue <prefix>.parked       consumed by Run when a ParkFunc is set
//
// A message published to topic T is routed to <prefix>.T with mandatory set and publisher
// confirms; Publish returns once the broker confirmed every message, and a returned message
// (no queue) is pubsub.ErrUnroutable. Messages are persistent. The topology is declared on every
// new connection, before its first publish, and again when a queue of ours turns out to be
// missing on a live connection (a returned publish to one of our topics, or a consume that gets
// NOT_FOUND); only the returned messages are then published again.
//
// # Redelivery
//
// Attempts are counted in our own header (x-anchord-attempt), never from x-death, whose counts
// RabbitMQ stopped incrementing for republished messages (3.13) and which we drop on republish.
// When a handler fails, the subscriber publishes a failure report (the message with the error
// text and a permanent flag) to the redelivery queue and then acks; if that publish fails it
// rejects instead and the queue dead-letters the message to the same place without the reason.
// The router (Run) then, for a failure of delivery n:
//
//   - parks it when the error was Permanent or n = MaxAttempts: a copy with reason, attempt count
//     and history goes to the parked queue, whose consumer acks it only once the ParkFunc
//     returned nil (without a ParkFunc it stays there; DrainParked takes it out);
//   - forwards it to its topic at once when Delay(n) = 0 (the first rejection);
//   - otherwise sends it to the wait tier of Delay(n) with its due time; when the tier's TTL
//     expires the queue dead-letters it back to the router, which forwards it to its topic.
//
// Every step publishes a copy with confirms and acks the original only then, so a crash between
// the two duplicates a message and never loses one. The one step that is the broker's own, a
// wait tier's expiry, is at-least-once too: the tiers are quorum queues with the at-least-once
// dead-letter strategy (classic-queue dead-lettering is at-most-once; we use it only as the
// fallback of a failed failure report).
//
// # Wait tiers
//
// RabbitMQ expires messages only at the head of a queue, so one wait queue with per-message TTLs
// (Orb's design) holds a 2 s wait behind a 60 s one. Here every tier is a queue with one fixed
// TTL: the tiers are the distinct values of Delay(2) … Delay(MaxAttempts−1), truncated to the
// millisecond, so a redelivery waits in exactly one queue for its delay (less than 1 ms short).
// With the defaults (2 s × 1.5, max 1 min, 30 attempts) that is ten queues: 2000, 3000, 4500,
// 6750, 10125, 15187, 22781, 34171, 51257 and 60000 ms. A schedule with more than MaxWaitTiers
// distinct waits keeps MaxWaitTiers of them, spread over the range.
//
// A delayed publish, or a wait with no tier of its own, is made of hops: each hop waits in the
// longest tier not longer than what remains (or the shortest tier), and the router sends the
// message round again until it is due (x-anchord-deliver-at, within 10 ms). A message is never
// early; it is late by less than the shortest tier. Changing the schedule creates new tier queues;
// messages in the old ones still come back through the router. Old, empty tier queues can be
// deleted by hand.
//
// # Connections
//
// Publishers and consumers use separate connections. Channels are handed out by a connector per
// role, which opens another connection when the current one holds MaxConnectionChannels
// channels. Publishing uses a pool of PublisherChannelPoolSize confirm-mode channels; a Publish
// holds one channel and waits for its confirms (windows of 256) always bounded by its context.
// A broker can also keep a connection open and stop answering it (RabbitMQ stops reading
// publishing connections under a memory or disk alarm), and opening, setting up or closing a
// channel cannot be abandoned midway: so a Publish talks to the broker from a goroutine of its
// own and returns ErrUnavailable when its context ends, while that goroutine keeps its pool slot
// until the broker answers or the connection dies. Close ends such goroutines by closing the
// connections, giving the broker DialTimeout to acknowledge. RabbitMQ says when it blocks a
// connection (connection.blocked); while it blocks a publisher connection, Check reports the
// broker unavailable with its reason.
// A subscription with pool size N spreads its N slots over channels of SubscriberChannelSlots
// (default 64) slots each, with prefetch equal to the slots; a handler that has not returned
// holds one unit of prefetch and never blocks another slot.
//
// When the broker goes away nothing runs in the background: the next caller that needs a
// channel dials again, at most once per backoff interval (ReconnectInterval doubling up to
// ReconnectMax), and in between Publish and Check fail at once with pubsub.ErrUnavailable.
// Subscriptions and Run retry with the same backoff, which is what brings the connection back
// when nobody publishes; the new connection redeclares the topology and they consume again.
// Publishes whose confirms were lost fail; the caller retries them (handlers are idempotent).
// New waits for an unreachable broker with backoff, logging "waiting for RabbitMQ", until its
// context ends; a broker that answers and refuses (credentials, a missing or closed vhost) makes
// it return ErrRefused at once, since waiting would not change the answer.
//
// # What it does worse
//
//   - At-least-once only: a lost ack or a crash between republish and ack delivers twice.
//   - Nothing moves unless Run is running somewhere: with every Run stopped, failed messages
//     pile up in the redelivery queue (safely) and delayed messages are late.
//   - Delays shorter than the shortest tier are rounded up to it.
//
// # Measurements
//
// docs/design/pubsub-rabbitmq.md has the figures: publish and end-to-end rates against bare
// amqp091-go in the same run (ratios 0.88–1.09), classic versus quorum (classic faster on one
// node, hence the default), and the subscriber channel layout (one shared channel per pool of
// up to 64 slots, as fast or faster than a channel per slot).
package amqppubsub
