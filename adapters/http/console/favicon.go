package console

import (
	_ "embed"
	"net/http"

	"github.com/gin-gonic/gin"
)

// faviconICO is the console's icon (a 32×32 PNG in an ICO file), also under /console/static.
//
//go:embed static/favicon.ico
var faviconICO []byte

// favicon is the console's icon, served from the binary at /favicon.ico where browsers look
// for it (the layout links it too). Who: anyone.
func favicon(g *gin.Context) {
	g.Header("X-Content-Type-Options", "nosniff")
	g.Header("Cache-Control", "public, max-age=86400")
	g.Data(http.StatusOK, "image/x-icon", faviconICO)
}
