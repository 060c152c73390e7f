package console

import (
	"bytes"
	"io"
	"mime"
	"net/http"

	"github.com/gin-gonic/gin"
)

// MaxFormBytes bounds a console form body. The largest forms the console posts are the sign-in
// form (a token of some 50 characters and the CSRF token) and the erasure form (five identity
// rows of id, login and e-mail, each value at most 200 bytes: under 4 KiB of ASCII); 8 KiB
// leaves room for both and keeps thousands of concurrent posts to a few MiB of memory.
const MaxFormBytes = 8 << 10

// formContentType is the only body the console's forms send (no file upload anywhere).
const formContentType = "application/x-www-form-urlencoded"

// boundForm guards every console POST before anything reads its body: a body that is not
// application/x-www-form-urlencoded is refused 415 (a multipart body is never parsed, so
// nothing is spooled to the temporary directory), a declared length over MaxFormBytes 413,
// and an undeclared (chunked) body is read up to MaxFormBytes+1 bytes only, then refused 413
// when longer. The refusals read nothing more, close the connection (the rest of the body is
// not drained) and set no cookie.
func (c *console) boundForm(g *gin.Context) {
	if g.Request.Method != http.MethodPost {
		g.Next()
		return
	}
	mediaType, _, err := mime.ParseMediaType(g.GetHeader("Content-Type"))
	if err != nil || mediaType != formContentType {
		c.refuseBody(g, http.StatusUnsupportedMediaType, "Unsupported form", "The console accepts only forms it served itself.")
		return
	}
	if g.Request.ContentLength > MaxFormBytes {
		c.refuseBody(g, http.StatusRequestEntityTooLarge, "Form too large", "This form is larger than any form of the console.")
		return
	}
	body, err := io.ReadAll(io.LimitReader(g.Request.Body, MaxFormBytes+1))
	if err != nil {
		c.refuseBody(g, http.StatusBadRequest, "Form not readable", "The form could not be read. Please try again.")
		return
	}
	if len(body) > MaxFormBytes {
		c.refuseBody(g, http.StatusRequestEntityTooLarge, "Form too large", "This form is larger than any form of the console.")
		return
	}
	g.Request.Body = io.NopCloser(bytes.NewReader(body))
	g.Next()
}

func (c *console) refuseBody(g *gin.Context, status int, title, message string) {
	g.Header("Connection", "close")
	c.render(g, status, "error", page{Title: title, Message: message})
	g.Abort()
}
