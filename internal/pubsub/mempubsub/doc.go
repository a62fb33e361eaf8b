// Package mempubsub is the in-process implementation of the pubsub contract. It is the fake that
// the tests of pub/sub users run against (several packages' tests, and the pubsubtest suite
// that proves it behaves like amqppubsub); embedded mode does not use a broker at all — intake
// writes straight into the queue — so no production code imports it. Instances attached to one Broker share its queues, so several instances in one
// process behave like several anchord instances on one RabbitMQ (competing consumers).
//
// It follows the contract's semantics exactly: redelivery with the RedeliveryConfig schedule
// (a redelivered message waits in its queue, invisible until its time has come), parking through
// the ParkFunc, delayed publish, pools and drain. No goroutine runs outside Subscribe: each pool
// slot waits for the earliest message that is due, woken by a publish or by a timer.
//
// What it does worse than amqppubsub: nothing is persistent. Messages live in memory and are
// lost when the process exits; "confirmed" means "in this process's queue". Parked messages
// whose ParkFunc keeps failing until the subscription stops stay in the Broker (Broker.Parked)
// and are lost with the process too.
package mempubsub
