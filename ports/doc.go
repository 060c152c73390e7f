// Package ports declares the interfaces the application needs from the outside world (the inbox
// store, the admission store, the connection directory, the step runner, clock, metrics, logger)
// and the ones each provider adapter implements (verifier, envelope parser, subject key deriver,
// handlers).
//
// "Port" here means an interface owned by the core, in the hexagonal sense. It does not mean
// an inbound HTTP handler; those live in adapters/http.
package ports
