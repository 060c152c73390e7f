// Package inbox is the pure model of the transactional webhook inbox: a Delivery moves
// QUEUED → LEASED → DONE | QUEUED (retry) | DEAD under a Lease whose epoch every outcome must
// name; a Scope serialises the deliveries of one resource of one workspace; a Step names one
// idempotent database step of a handler; failures are classified into a closed set of classes
// that the RetryPolicy turns into a Decision.
//
// The same rules are enforced again by SQL in adapters/postgres (the SQL is the backstop across
// servers, this package is the explanation). Nothing outside domain/ re-implements them.
package inbox
