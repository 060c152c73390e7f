package ports

import "time"

// Clock is the service's time. Lease expiry uses the database's clock_timestamp() instead,
// because servers' clocks differ and the lease is compared in SQL; a store whose Config names a
// Clock (specs only) passes it to its SQL as "now" instead (ARCHITECTURE.md "Time in SQL").
type Clock interface {
	Now() time.Time
}

// Logger is the structured logger the core writes to; *zap.SugaredLogger satisfies it.
// Key-value pairs alternate names and values. Never pass a secret, token or error message
// of a handler failure.
type Logger interface {
	Debugw(msg string, keysAndValues ...any)
	Infow(msg string, keysAndValues ...any)
	Warnw(msg string, keysAndValues ...any)
	Errorw(msg string, keysAndValues ...any)
}

// AdmissionMetrics counts webhook traffic (CONTRACT.md metric names).
type AdmissionMetrics interface {
	Received(provider string)         // webhook_received_total{provider}
	Rejected(provider, reason string) // webhook_rejected_total{provider,reason}
}

// ConsumerMetrics counts the claimers' work (CONTRACT.md metric names).
type ConsumerMetrics interface {
	Handled(provider, outcome string)                 // integration_consumer_handled_total
	Retried(provider, cause string)                   // integration_consumer_retry_total
	Dropped(provider, reason string)                  // integration_message_dropped_total
	RetentionFailed()                                 // integration_consumer_inbox_retention_failures_total
	HandlerDuration(provider string, d time.Duration) // integration_consumer_handler_seconds
	InboxRows(state string, n int64)                  // integration_inbox_rows{state}
	OldestQueuedAge(d time.Duration)                  // integration_inbox_oldest_queued_age_seconds
}
