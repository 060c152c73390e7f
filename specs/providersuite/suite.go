package providersuite

import (
	"sync"

	"github.com/onsi/ginkgo/v2"
)

// Run declares the conformance suite of the provider f describes, at package level of its spec
// package (`var _ = providersuite.Run(fixture)`), next to the package's Harness. The webhook
// specs need no database; the others share the harness's database and read API server and
// start, like every spec of the package, from empty tables.
func Run(f Fixture) bool {
	var (
		once sync.Once
		w    *world
	)
	// The handlers, feed and erasure store are built once, at the first spec that needs them
	// (the harness's pool exists from BeforeSuite on).
	built := func() *world {
		ginkgo.GinkgoHelper()
		once.Do(func() { w = f.build() })
		return w
	}
	return ginkgo.Describe(f.Name+" provider conformance", func() {
		receiving(f)
		personViews(f)
		steps(f, built)
		personErasure(f, built)
		teardown(f, built)
		readAPI(f, built)
	})
}
