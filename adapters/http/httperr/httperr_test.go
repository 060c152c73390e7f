package httperr_test

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/jackc/pgx/v5/pgconn"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/http/httperr"
	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
)

var _ = Describe("The error to status map", func() {
	DescribeTable("answers a PostgreSQL data exception with 400, never 500",
		func(code string) {
			err := fmt.Errorf("insert workspace: %w", &pgconn.PgError{Code: code, Message: "secret detail"})
			status, body := httperr.Status(err)
			Expect(status).To(Equal(http.StatusBadRequest))
			Expect(body).To(Equal("bad-request"))
		},
		Entry("invalid text representation (jsonb input)", "22P02"),
		Entry("untranslatable character (\\u0000 in jsonb)", "22P05"),
		Entry("character not in repertoire (NUL in text)", "22021"),
		Entry("numeric value out of range", "22003"),
		Entry("string data right truncation", "22001"),
	)
	It("keeps other PostgreSQL errors unexpected (500)", func() {
		status, _ := httperr.Status(&pgconn.PgError{Code: "42P01"})
		Expect(status).To(Equal(http.StatusInternalServerError))
		status, _ = httperr.Status(&pgconn.PgError{Code: "23502"})
		Expect(status).To(Equal(http.StatusInternalServerError))
	})
	It("answers contention (a lock wait that timed out) with 503 retry", func() {
		status, body := httperr.Status(fmt.Errorf("lock: %w", inbox.ErrBusy))
		Expect(status).To(Equal(http.StatusServiceUnavailable))
		Expect(body).To(Equal("retry"))
	})
	It("answers a statement the database cancelled (a statement timeout) with 503 retry", func() {
		status, body := httperr.Status(sqlkit.Interpret("list deliveries", &pgconn.PgError{Code: "57014", Message: "canceling statement due to statement timeout"}))
		Expect(status).To(Equal(http.StatusServiceUnavailable))
		Expect(body).To(Equal("retry"))
	})
	It("answers a caller with too many requests in flight with 429 retry", func() {
		status, body := httperr.Status(fmt.Errorf("read: %w", ports.ErrTooManyRequests))
		Expect(status).To(Equal(http.StatusTooManyRequests))
		Expect(body).To(Equal("retry"))
	})
	It("keeps a refusal's reason for 400s", func() {
		status, body := httperr.Status(ports.Reject(ports.ErrMalformed, "invalid-escape", "lone surrogate"))
		Expect(status).To(Equal(http.StatusBadRequest))
		Expect(body).To(Equal("invalid-escape"))
		status, _ = httperr.Status(errors.New("boom"))
		Expect(status).To(Equal(http.StatusInternalServerError))
	})
})
