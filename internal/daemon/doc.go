// Package daemon wires anchord together and runs it: it builds every component from the
// configuration, chooses the backends (SQLite or PostgreSQL; in-process pub/sub or RabbitMQ),
// runs all long-lived loops under one supervisor, and shuts them down in an explicit order.
// It is the only package that imports backends.
package daemon
