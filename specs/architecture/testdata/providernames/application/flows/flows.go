package flows

// A comment may name the toy provider as an example: not reported.

// flowToy names a provider in the core: reported (identifier and string).
const flowToy = "toy-app"

// Hosted is a URL of another host than a provider's: not reported.
const Hosted = "https://example.com"
