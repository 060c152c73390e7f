// Package contract is the provider contract: what a provider implements so the service can
// receive, store, handle, erase and tear down its deliveries, and nothing else. A provider
// author reads this package, and the few core types it names from package ports, to know
// everything a provider must do; adapters/providerkit is the kit that does most of it.
//
// # What a provider implements
//
// A provider is one [Provider]: its static part ([ProviderModule]: connection kinds, config
// validation and routing key, resource types; [RejectionReasoner]: every refusal reason its
// webhook uses), its receiving side ([Webhook]: a [Verifier] that authenticates the raw
// request before anything is parsed, an [EnvelopeParser] that reads the verified body, and
// optionally a [HeaderVerifier] that refuses from the headers alone), its handlers (registered
// per event type through [HandlerRegistrar]), where its payloads and views name a person
// ([PersonFields], [PersonViews]) and its mirror as person erasure runs it ([PersonDataStore]).
//
// Optional parts, each an interface the built provider may implement: [AccessChecking]
// (subscriptions only to what the connection's own credential can read), [BackgroundWork]
// (loops of its own), [StepNameRules] (step-name parts that would name a person),
// [InstallationSource] (control events without a connection), [CounterDeclarer] (counters of
// its own), [InstallFlows] (App or OAuth installs) and [Syncing] (backfill and teardown).
//
// # What a provider is given
//
// From package ports: the raw [ports.Request] and the verifier's [ports.SourceConnection]; the
// [ports.RouteSpec] it fills for admission; the [ports.Dispatch] its handlers receive and the
// [ports.DeliveryInbox] whose named steps ([ports.Tx]) every write goes through; the
// [ports.ChangePublisher] of the change feed; the [ports.SingletonLease] of its loops; the
// error kinds and [ports.Reject] for refusals. adapters/providerkit hands these over at build
// time.
//
// # Rules every provider keeps
//
// The shared conformance suite (specs/providersuite) proves them for every provider:
//   - verification comes before parsing, and every refusal uses a declared reason;
//   - a handler writes only through named, idempotent steps, so a retried delivery skips what
//     committed;
//   - every view field naming a person carries a `person` tag, and person erasure reaches every
//     mirror table and the change feed;
//   - tearing down a connection removes what only it brought into the workspace;
//   - the read API answers 401 without a token, 403 to another workspace's member, 404 for what
//     the workspace does not have, and reads only the caller's workspace.
package contract
