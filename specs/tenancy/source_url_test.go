package tenancy_test

import (
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/specs/support"
)

var _ = Describe("Canonical source URLs in admission", func() {
	It("stores the canonical URL of a connection registered as https://GitHub.com:443/ in the rows it admits", func(ctx SpecContext) {
		ws, _ := workspace("acme")
		r := createConnection("acme", adminToken, map[string]any{"kind": "GITHUB_APP", "sourceServerUrl": "https://GitHub.com:443/",
			"config": map[string]any{"installationId": installationA}})
		Expect(r.Status).To(Equal(http.StatusCreated), r.Raw)
		Expect(r.JSON).To(HaveKeyWithValue("sourceServerUrl", "https://github.com"))
		Expect(subscribe("acme", adminToken, r.ID("id"), repository(repoOfA)).Status).To(Equal(http.StatusOK))

		Expect(deliverIssue(installationA, repoOfA, "canonical-1").JSON).To(HaveKeyWithValue("stored", 1.0))
		Expect(support.Column(ctx, pool, `SELECT headers->>'Hephaestus-Source-Server-Url' FROM provider_event WHERE workspace_id = $1`, ws)).
			To(Equal([]string{"https://github.com"}))
	})
})
