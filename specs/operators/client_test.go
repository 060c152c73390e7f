package operators_test

import (
	"net/http"
	"strconv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/client/hxapi"
)

// The operator routes driven through the generated client (client/hxapi), as a downstream Go
// team would call them: the client is generated from the API document, and the suite's
// transport validates every request and answer against that document too.
var _ = Describe("The generated API client against the operator routes", func() {
	var (
		acme                  workspaceFixture
		acmeAdmin, acmeMember accountFixture
	)

	BeforeEach(func(ctx SpecContext) {
		acme = newWorkspace(ctx, "acme")
		acmeAdmin = newAccount(ctx, "ana", false, acme, "ADMIN")
		acmeMember = newAccount(ctx, "bob", false, acme, "MEMBER")
	})

	// as is the generated client calling with token.
	as := func(token string) *hxapi.ClientWithResponses {
		GinkgoHelper()
		api, err := hxapi.NewClientWithResponses(server.URL, hxapi.WithHTTPClient(client), hxapi.WithRequestEditorFn(hxapi.BearerToken(token)))
		Expect(err).NotTo(HaveOccurred())
		return api
	}

	It("finds a dead delivery by the provider's delivery id, shows its trace id, and replays it once", func(ctx SpecContext) {
		const (
			providerKey = "72d3f6a0-5b1e-11ef-8a1b-3f2e9c4d5e6f"
			traceID     = "4bf92f3577b34da6a3ce929d0e0e4736"
		)
		dead := insertRow(ctx, pool, row{Workspace: acme.ID, DeliveryKey: providerKey, State: "DEAD"})
		_, err := pool.Exec(ctx, `UPDATE provider_event SET trace_parent = $1 WHERE id = $2`,
			"00-"+traceID+"-00f067aa0ba902b7-01", dead)
		Expect(err).NotTo(HaveOccurred())
		done := insertRow(ctx, pool, row{Workspace: acme.ID, State: "DONE"})
		insertRow(ctx, pool, row{Workspace: acme.ID, State: "QUEUED"})

		By("listing the deliveries with the provider's delivery id as the filter")
		key := providerKey
		found, err := as(acmeMember.Token).ListDeliveriesWithResponse(ctx, acme.Slug, &hxapi.ListDeliveriesParams{DeliveryKey: &key})
		Expect(err).NotTo(HaveOccurred())
		Expect(found.StatusCode()).To(Equal(http.StatusOK), string(found.Body))
		Expect(found.JSON200).NotTo(BeNil())
		Expect(found.JSON200.Total).To(Equal(1))
		Expect(found.JSON200.Items).To(HaveLen(1))
		Expect(int64(found.JSON200.Items[0].Id)).To(Equal(dead))
		Expect(found.JSON200.Items[0].DeliveryKey).To(Equal(providerKey))
		Expect(found.JSON200.Items[0].State).To(Equal(hxapi.DeliveryRowStateDEAD))

		By("listing by state, the typed enum of the document")
		byState, err := as(acmeMember.Token).ListDeliveriesWithResponse(ctx, acme.Slug, &hxapi.ListDeliveriesParams{State: ptr(hxapi.ListDeliveriesParamsStateDONE)})
		Expect(err).NotTo(HaveOccurred())
		Expect(byState.StatusCode()).To(Equal(http.StatusOK), string(byState.Body))
		Expect(byState.JSON200.Items).To(HaveLen(1))
		Expect(int64(byState.JSON200.Items[0].Id)).To(Equal(done))

		By("reading the delivery's detail with its trace id")
		detail, err := as(acmeMember.Token).GetDeliveryWithResponse(ctx, acme.Slug, strconv.FormatInt(dead, 10))
		Expect(err).NotTo(HaveOccurred())
		Expect(detail.StatusCode()).To(Equal(http.StatusOK), string(detail.Body))
		Expect(detail.JSON200).NotTo(BeNil())
		Expect(detail.JSON200.State).To(Equal(hxapi.DeliveryDetailStateDEAD))
		Expect(detail.JSON200.TraceId).To(HaveValue(Equal(traceID)))
		Expect(detail.JSON200.Headers).To(HaveValue(HaveKey("X-GitHub-Event")))

		By("refusing the member's replay: replaying is the workspace ADMIN's")
		refused, err := as(acmeMember.Token).ReplayDeadLetterWithResponse(ctx, acme.Slug, strconv.FormatInt(dead, 10))
		Expect(err).NotTo(HaveOccurred())
		Expect(refused.StatusCode()).To(Equal(http.StatusForbidden), string(refused.Body))
		Expect(refused.JSON403).NotTo(BeNil())
		Expect(readRow(ctx, dead).State).To(Equal("DEAD"))

		By("replaying it as the workspace ADMIN")
		replayed, err := as(acmeAdmin.Token).ReplayDeadLetterWithResponse(ctx, acme.Slug, strconv.FormatInt(dead, 10))
		Expect(err).NotTo(HaveOccurred())
		Expect(replayed.StatusCode()).To(Equal(http.StatusOK), string(replayed.Body))
		Expect(replayed.JSON200).NotTo(BeNil())
		Expect(int64(replayed.JSON200.Id)).To(Equal(dead))
		Expect(replayed.JSON200.State).To(Equal(hxapi.ReplayedStateQUEUED))
		Expect(replayed.JSON200.ReplayedByPrincipal).To(HaveValue(Equal(hxapi.ReplayedReplayedByPrincipalACCOUNT)))
		Expect(replayed.JSON200.ReplayedBy).To(HaveValue(BeNumerically("==", acmeAdmin.ID)))
		Expect(readRow(ctx, dead)).To(Equal(storedRow{State: "QUEUED", Attempt: 0, ReplayedBy: &acmeAdmin.ID}))

		By("answering a second replay with the documented 409")
		again, err := as(acmeAdmin.Token).ReplayDeadLetterWithResponse(ctx, acme.Slug, strconv.FormatInt(dead, 10))
		Expect(err).NotTo(HaveOccurred())
		Expect(again.StatusCode()).To(Equal(http.StatusConflict), string(again.Body))
		Expect(again.JSON409).To(HaveValue(HaveField("Error", "not-dead")))

		By("counting the inbox by state (the workspace ADMIN's view)")
		counts, err := as(acmeAdmin.Token).GetInboxCountsWithResponse(ctx, acme.Slug)
		Expect(err).NotTo(HaveOccurred())
		Expect(counts.StatusCode()).To(Equal(http.StatusOK), string(counts.Body))
		Expect(counts.JSON200).NotTo(BeNil())
		Expect(counts.JSON200.Counts.QUEUED).To(Equal(2))
		Expect(counts.JSON200.Counts.DONE).To(Equal(1))
		Expect(counts.JSON200.Counts.DEAD).To(Equal(0))
	})

	It("gets the documented 401 without a token", func(ctx SpecContext) {
		api, err := hxapi.NewClientWithResponses(server.URL, hxapi.WithHTTPClient(client))
		Expect(err).NotTo(HaveOccurred())
		r, err := api.ListDeliveriesWithResponse(ctx, acme.Slug, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(r.StatusCode()).To(Equal(http.StatusUnauthorized), string(r.Body))
		Expect(r.JSON401).NotTo(BeNil())
		Expect(r.JSON200).To(BeNil())
	})
})

func ptr[T any](v T) *T { return &v }
