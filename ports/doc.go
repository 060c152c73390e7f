// Package ports declares what the core (application/) needs from the outside world: the inbox
// store, the admission store and connection directory, the step runner and its transactions,
// the management, change-feed, erasure, replay and backfill stores, clock, metrics, tracer and
// logger, and the error kinds every layer shares.
//
// What a provider implements is the provider contract, package ports/contract; it names the
// types of this package a provider is given (the request, the dispatch, the step runner).
//
// "Port" here means an interface owned by the core, in the hexagonal sense. It does not mean
// an inbound HTTP handler; those live in adapters/http.
package ports
