package erasure_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/domain/erasure"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
)

var _ = Describe("A person-erasure request", func() {
	github := provider.MustNew("GITHUB")

	identity := func(id, login string) erasure.Identity {
		i, err := erasure.NewIdentity(id, login, "")
		Expect(err).NotTo(HaveOccurred())
		return i
	}

	Describe("its scope", func() {
		It("needs an id or a login for every identity", func() {
			_, err := erasure.NewIdentity("", "", "")
			Expect(err).To(MatchError(erasure.ErrInvalidRequest))
			_, err = erasure.NewIdentity(" 583231", "", "")
			Expect(err).To(MatchError(erasure.ErrInvalidRequest))
		})

		It("names a registered source namespace: an absolute http(s) URL without credentials", func() {
			ids := []erasure.Identity{identity("583231", "octocat")}
			for _, bad := range []string{"", "github.com", "ftp://github.com", "https://user:pw@github.com", "https://github.com/?q=1"} {
				_, err := erasure.NewScope(github, bad, ids)
				Expect(err).To(MatchError(erasure.ErrInvalidRequest), bad)
			}
			s, err := erasure.NewScope(github, "https://github.com", ids)
			Expect(err).NotTo(HaveOccurred())
			Expect(s.SourceServerURL()).To(Equal("https://github.com"))
		})

		It("takes an e-mail address as an identity, and refuses what is no address", func() {
			i, err := erasure.NewIdentity("", "", "Mona@Example.com")
			Expect(err).NotTo(HaveOccurred())
			Expect(i.Email()).To(Equal("Mona@Example.com"))
			for _, bad := range []string{"mona", "@example.com", "mona@", "a@b@c"} {
				_, err := erasure.NewIdentity("", "", bad)
				Expect(err).To(MatchError(erasure.ErrInvalidRequest), bad)
			}
		})

		It("refuses a request without identities", func() {
			_, err := erasure.NewScope(github, "https://github.com", nil)
			Expect(err).To(MatchError(erasure.ErrInvalidRequest))
		})

		It("grows by the id↔login pairs found, ignoring halves and known pairs", func() {
			s, err := erasure.NewScope(github, "https://github.com", []erasure.Identity{identity("", "octocat")})
			Expect(err).NotTo(HaveOccurred())
			grown, grew, err := s.WithPairs([]erasure.Identity{
				erasure.RestoreIdentity("583231", "octocat", ""),
				erasure.RestoreIdentity("583231", "", ""),
				erasure.RestoreIdentity("583231", "octocat", ""),
			})
			Expect(err).NotTo(HaveOccurred())
			Expect(grew).To(BeTrue())
			Expect(grown.Identities()).To(Equal([]erasure.Identity{identity("", "octocat"), identity("583231", "octocat")}))
			Expect(s.Identities()).To(HaveLen(1), "the frozen scope it grew from is unchanged")

			_, grew, err = grown.WithPairs([]erasure.Identity{erasure.RestoreIdentity("583231", "octocat", "")})
			Expect(err).NotTo(HaveOccurred())
			Expect(grew).To(BeFalse())
		})
	})

	Describe("its passes", func() {
		var req erasure.Request

		BeforeEach(func() {
			req = erasure.RestoreRequest(erasure.StoredRequest{ID: 1, State: erasure.Running, Passes: 1})
		})

		It("runs the workspace inbox, then the installation inbox, then is done", func() {
			st, pass, ok := req.Next(nil, nil)
			Expect([]any{st, pass, ok}).To(Equal([]any{erasure.WorkspaceInbox, 1, true}))
			receipts := []erasure.Receipt{{Store: erasure.WorkspaceInbox, Pass: 1}}
			st, pass, ok = req.Next(nil, receipts)
			Expect([]any{st, pass, ok}).To(Equal([]any{erasure.InstallationInbox, 1, true}))
			receipts = append(receipts, erasure.Receipt{Store: erasure.InstallationInbox, Pass: 1})
			_, _, ok = req.Next(nil, receipts)
			Expect(ok).To(BeFalse())
		})

		It("runs the provider's mirror stores before both inbox stores", func() {
			mirrors := []erasure.Store{erasure.MirrorStore(github)}
			Expect(mirrors[0].String()).To(Equal("github-mirror"))
			st, pass, ok := req.Next(mirrors, nil)
			Expect([]any{st, pass, ok}).To(Equal([]any{erasure.MirrorStore(github), 1, true}))
			st, _, _ = req.Next(mirrors, []erasure.Receipt{{Store: erasure.MirrorStore(github), Pass: 1}})
			Expect(st).To(Equal(erasure.WorkspaceInbox))
			Expect(erasure.Plan(mirrors)).To(Equal([]erasure.Store{erasure.MirrorStore(github), erasure.WorkspaceInbox, erasure.InstallationInbox}))
		})

		It("reads its store names back, and no invented one", func() {
			for _, name := range []string{"github-mirror", "workspace-inbox", "installation-inbox"} {
				st, err := erasure.ParseStore(name)
				Expect(err).NotTo(HaveOccurred())
				Expect(st.String()).To(Equal(name))
			}
			for _, bad := range []string{"", "mirror", "-mirror", "GITHUB-mirror", "github-inbox"} {
				_, err := erasure.ParseStore(bad)
				Expect(err).To(HaveOccurred(), bad)
			}
		})

		It("is done when its last pass rewrote every row it had to", func() {
			receipts := []erasure.Receipt{
				{Store: erasure.WorkspaceInbox, Pass: 1, FailedRows: []int64{7}}, {Store: erasure.InstallationInbox, Pass: 1},
			}
			resumed := erasure.RestoreRequest(erasure.StoredRequest{ID: 1, State: erasure.Running, Passes: 2})
			receipts = append(receipts, erasure.Receipt{Store: erasure.WorkspaceInbox, Pass: 2}, erasure.Receipt{Store: erasure.InstallationInbox, Pass: 2})
			settled := resumed.Settle(receipts)
			Expect(settled.State()).To(Equal(erasure.Done), "an earlier pass's failed rows were retried by the last")
			Expect(settled.Passes()).To(Equal(2))
			Expect(settled.RetryDelay()).To(BeZero())
		})

		It("adds a later pass while its last pass left rows it could not rewrite, then fails", func() {
			r := req
			var receipts []erasure.Receipt
			for n := 1; n <= erasure.MaxRowRetries; n++ {
				receipts = append(receipts, erasure.Receipt{Store: erasure.WorkspaceInbox, Pass: r.Passes(), FailedRows: []int64{7}},
					erasure.Receipt{Store: erasure.InstallationInbox, Pass: r.Passes()})
				r = r.Settle(receipts)
				Expect(r.State()).To(Equal(erasure.Running))
				Expect(r.Passes()).To(Equal(1+n), "one more pass asked for")
				Expect(r.Retries()).To(Equal(n))
				Expect(r.RetryDelay()).To(Equal(erasure.RowRetryDelay(n)))
				_, pass, ok := r.Next(nil, receipts)
				Expect([]any{pass, ok}).To(Equal([]any{1 + n, true}))
			}
			r = r.Settle([]erasure.Receipt{{Store: erasure.InstallationInbox, Pass: r.Passes(), FailedRows: []int64{9}}})
			Expect(r.State()).To(Equal(erasure.Failed))
			Expect(r.RetryDelay()).To(BeZero())

			r.Resume()
			Expect([]any{r.State(), r.Retries(), r.RetryDelay()}).To(Equal([]any{erasure.Running, 0, time.Duration(0)}), "a resume grants the retries again")
		})

		It("waits 30 seconds before its first added pass, doubling up to 10 minutes", func() {
			Expect(erasure.RowRetryDelay(1)).To(Equal(30 * time.Second))
			Expect(erasure.RowRetryDelay(2)).To(Equal(time.Minute))
			Expect(erasure.RowRetryDelay(5)).To(Equal(8 * time.Minute))
			Expect(erasure.RowRetryDelay(6)).To(Equal(10 * time.Minute))
			Expect(erasure.RowRetryDelay(60)).To(Equal(10 * time.Minute))
		})

		It("repeats both passes on resume, even after it was done", func() {
			receipts := []erasure.Receipt{{Store: erasure.WorkspaceInbox, Pass: 1}, {Store: erasure.InstallationInbox, Pass: 1}}
			done := erasure.RestoreRequest(erasure.StoredRequest{ID: 1, State: erasure.Done, Passes: 1})
			done.Resume()
			Expect(done.State()).To(Equal(erasure.Running))
			st, pass, ok := done.Next(nil, receipts)
			Expect([]any{st, pass, ok}).To(Equal([]any{erasure.WorkspaceInbox, 2, true}))
		})
	})
})
